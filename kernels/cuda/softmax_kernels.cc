// Host side of the CUDA softmax family: softmax, log_softmax, their gradients, and
// sparse_softmax_cross_entropy(_grad), whose labels are checked on the device (error flag).
#include "kernels/cpu/softmax_checks.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/device_fault.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/softmax_launch.h"

namespace twinflow::kernels::cuda {
namespace {

RowView RowsOf(const AxisView& v) { return RowView{v.outer, v.n, v.inner}; }

void Softmax(const KernelContext& ctx, bool log, const char* op) {
  const AxisView view = CheckSoftmax(ctx, op);
  const SoftmaxFusion f = FusionOf(ctx, view, op);
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  LaunchSoftmax(log, x.dtype(), x.raw(), y.raw(), RowsOf(view),
                SoftmaxFusionArgs{f.scale, f.causal ? f.query_rows : 0}, Env(ctx, op).stream);
}

void SoftmaxGrad(const KernelContext& ctx, bool log, const char* op) {
  const AxisView view = CheckSoftmaxGrad(ctx, op);
  const double scale = FusionOf(ctx, view, op).scale;
  const Tensor& y = *ctx.inputs[0];
  const Tensor& dy = *ctx.inputs[1];
  Tensor& dx = *ctx.outputs[0];
  LaunchSoftmaxGrad(log, y.dtype(), y.raw(), dy.raw(), dx.raw(), RowsOf(view), scale,
                    Env(ctx, op).stream);
}

void SparseXent(const KernelContext& ctx, bool grad) {
  const char* op = grad ? "sparse_softmax_cross_entropy_grad" : "sparse_softmax_cross_entropy";
  const int64_t classes = CheckSparseXent(ctx, grad, op).classes;
  const Tensor& labels = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
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
