// Host side of the CUDA reductions: reduce_sum, reduce_mean (divides by the logical extent),
// reduce_max, broadcast_reduced_like and reduce_max_grad.
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/elementwise_launch.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/reduction_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// Strides of the reduced tensor when walking the full one: 0 on reduced axes.
std::vector<int64_t> ReducedStrides(const Shape& full, const std::vector<bool>& reduced) {
  std::vector<int64_t> strides(full.rank(), 0);
  int64_t stride = 1;
  for (int d = full.rank() - 1; d >= 0; --d) {
    if (!reduced[d]) {
      strides[d] = stride;
      stride *= full[d];
    }
  }
  return strides;
}

void Reduce(const KernelContext& ctx, const std::string& op, ReduceKind kind, bool mean) {
  CheckArity(ctx, 1, 1, op);
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const std::vector<bool> reduced = ReducedAxes(ctx.attrs, x.shape().rank(), op);
  CheckShape(y, ReducedShape(x.shape(), reduced, ctx.attrs.GetBool("keepdims", false)), op,
             "output");
  CheckDType(y, x.dtype(), op, "output");
  double scale = 1.0;
  if (mean) {  // the logical extent: partial means of a split axis add up
    const Shape& logical = LogicalInputShape(ctx, 0);
    int64_t count = 1;
    for (int i = 0; i < logical.rank(); ++i) count *= reduced[i] ? logical[i] : 1;
    scale = 1.0 / static_cast<double>(count);
  }
  LaunchReduce(kind, x.dtype(), x.raw(), y.raw(), MakeReduceSpace(x.shape(), reduced, op), scale,
               Env(ctx, op).stream);
}

void BroadcastReducedLike(const KernelContext& ctx) {
  const std::string op = "broadcast_reduced_like";
  CheckArity(ctx, 2, 1, op);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const Shape& like = ctx.inputs[1]->shape();
  CheckShape(out, like, op, "output");
  CheckDType(out, dy.dtype(), op, "output");
  const std::vector<bool> reduced = ReducedAxes(ctx.attrs, like.rank(), op);
  CheckShape(dy, ReducedShape(like, reduced, ctx.attrs.GetBool("keepdims", false)), op, "dy");
  const Strides3 s = MakeStrides3(like, {ReducedStrides(like, reduced)}, op);
  LaunchBinary(BinaryOp::kScaleFirst, dy.dtype(), dy.raw(), nullptr, out.raw(), out.numel(), s,
               ctx.attrs.GetDouble("scale", 1.0), Env(ctx, op).stream);
}

void ReduceMaxGrad(const KernelContext& ctx) {
  const std::string op = "reduce_max_grad";
  CheckArity(ctx, 3, 1, op);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.inputs[1];
  const Tensor& dy = *ctx.inputs[2];
  Tensor& dx = *ctx.outputs[0];
  const std::vector<bool> reduced = ReducedAxes(ctx.attrs, x.shape().rank(), op);
  const Shape y_shape = ReducedShape(x.shape(), reduced, ctx.attrs.GetBool("keepdims", false));
  CheckShape(y, y_shape, op, "y");
  CheckShape(dy, y_shape, op, "dy");
  CheckShape(dx, x.shape(), op, "dx");
  for (const Tensor* t : {&y, &dy, static_cast<const Tensor*>(&dx)}) {
    CheckDType(*t, x.dtype(), op, "every tensor");
  }
  const Strides3 s = MakeStrides3(x.shape(), {ReducedStrides(x.shape(), reduced)}, op);
  LaunchReduceMaxGrad(x.dtype(), x.raw(), y.raw(), dy.raw(), dx.raw(), x.numel(), s,
                      Env(ctx, op).stream);
}

}  // namespace

void RegisterReductionCudaKernels(KernelRegistry& registry) {
  const auto floats = {DType::kF32, DType::kBF16};
  RegisterCuda(registry, "reduce_sum", floats, [](const KernelContext& ctx) {
    Reduce(ctx, "reduce_sum", ReduceKind::kSum, false);
  });
  RegisterCuda(registry, "reduce_mean", floats, [](const KernelContext& ctx) {
    Reduce(ctx, "reduce_mean", ReduceKind::kSum, true);
  });
  RegisterCuda(registry, "reduce_max", floats, [](const KernelContext& ctx) {
    Reduce(ctx, "reduce_max", ReduceKind::kMax, false);
  });
  RegisterCuda(registry, "broadcast_reduced_like", floats, BroadcastReducedLike);
  RegisterCuda(registry, "reduce_max_grad", floats, ReduceMaxGrad);
}

}  // namespace twinflow::kernels::cuda
