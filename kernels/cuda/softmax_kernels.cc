// Host side of the CUDA softmax family: softmax, log_softmax, their gradients, and
// sparse_softmax_cross_entropy(_grad), whose labels are checked on the device (error flag).
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/device_fault.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/softmax_launch.h"

namespace twinflow::kernels::cuda {
namespace {

RowView RowsOf(const KernelContext& ctx, const char* op) {
  const Shape& shape = ctx.inputs[0]->shape();
  if (shape.rank() == 0) throw ShapeError(std::string(op) + ": input must have rank >= 1");
  const AxisView v = ViewAround(shape, KernelAxis(ctx.attrs.GetInt("axis", -1), shape.rank(), op));
  return RowView{v.outer, v.n, v.inner};
}

void Softmax(const KernelContext& ctx, bool log, const char* op) {
  CheckArity(ctx, 1, 1, op);
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  CheckShape(y, x.shape(), op, "output");
  CheckDType(y, x.dtype(), op, "output");
  LaunchSoftmax(log, x.dtype(), x.raw(), y.raw(), RowsOf(ctx, op), Env(ctx, op).stream);
}

void SoftmaxGrad(const KernelContext& ctx, bool log, const char* op) {
  CheckArity(ctx, 2, 1, op);
  const Tensor& y = *ctx.inputs[0];
  const Tensor& dy = *ctx.inputs[1];
  Tensor& dx = *ctx.outputs[0];
  CheckShape(dy, y.shape(), op, "dy");
  CheckShape(dx, y.shape(), op, "dx");
  CheckDType(dy, y.dtype(), op, "dy");
  CheckDType(dx, y.dtype(), op, "dx");
  LaunchSoftmaxGrad(log, y.dtype(), y.raw(), dy.raw(), dx.raw(), RowsOf(ctx, op),
                    Env(ctx, op).stream);
}

void SparseXent(const KernelContext& ctx, bool grad) {
  const char* op = grad ? "sparse_softmax_cross_entropy_grad" : "sparse_softmax_cross_entropy";
  CheckArity(ctx, grad ? 3 : 2, 1, op);
  const Shape& logits = ctx.inputs[0]->shape();
  if (logits.rank() == 0) throw ShapeError(std::string(op) + ": logits must have rank >= 1");
  std::vector<int64_t> rows = logits.dims();
  const int64_t classes = rows.back();
  rows.pop_back();
  const Tensor& labels = *ctx.inputs[1];
  CheckShape(labels, Shape(rows), op, "labels");
  CheckIndexDType(labels, op, "labels");
  Tensor& out = *ctx.outputs[0];
  CheckShape(out, grad ? logits : labels.shape(), op, "output");
  CheckDType(out, ctx.inputs[0]->dtype(), op, "output");
  if (grad) {
    CheckShape(*ctx.inputs[2], labels.shape(), op, "dloss");
    CheckDType(*ctx.inputs[2], ctx.inputs[0]->dtype(), op, "dloss");
  }
  const CudaEnv& env = Env(ctx, op);
  const bool is64 = labels.dtype() == DType::kI64;
  LaunchCheckIndices(labels.raw(), is64, labels.numel(), classes, env.error_flag,
                     grad ? kXentGradLabelOutOfRange : kXentLabelOutOfRange, env.stream);
  LaunchSparseXent(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), labels.raw(), is64,
                   grad ? ctx.inputs[2]->raw() : nullptr, out.raw(), labels.numel(), classes,
                   env.stream);
}

}  // namespace

void RegisterSoftmaxCudaKernels(KernelRegistry& registry) {
  const auto floats = {DType::kF32, DType::kBF16};
  RegisterCuda(registry, "softmax", floats,
               [](const KernelContext& ctx) { Softmax(ctx, false, "softmax"); });
  RegisterCuda(registry, "log_softmax", floats,
               [](const KernelContext& ctx) { Softmax(ctx, true, "log_softmax"); });
  RegisterCuda(registry, "softmax_grad", floats,
               [](const KernelContext& ctx) { SoftmaxGrad(ctx, false, "softmax_grad"); });
  RegisterCuda(registry, "log_softmax_grad", floats,
               [](const KernelContext& ctx) { SoftmaxGrad(ctx, true, "log_softmax_grad"); });
  RegisterCuda(registry, "sparse_softmax_cross_entropy", floats,
               [](const KernelContext& ctx) { SparseXent(ctx, false); });
  RegisterCuda(registry, "sparse_softmax_cross_entropy_grad", floats,
               [](const KernelContext& ctx) { SparseXent(ctx, true); });
}

}  // namespace twinflow::kernels::cuda
