// Host side of the CUDA reductions: reduce_sum, reduce_mean (divides by the logical extent),
// reduce_max, broadcast_reduced_like and reduce_max_grad.
#include "kernels/cpu/reduction_checks.h"
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
  const std::vector<bool> reduced = CheckReduce(ctx, op);
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const double scale = mean ? ReduceMeanScale(ctx, reduced) : 1.0;
  LaunchReduce(kind, x.dtype(), x.raw(), y.raw(), MakeReduceSpace(x.shape(), reduced, op), scale,
               Env(ctx, op).stream);
}

void BroadcastReducedLike(const KernelContext& ctx) {
  const std::string op = "broadcast_reduced_like";
  const std::vector<bool> reduced = CheckBroadcastReducedLike(ctx);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const Shape& like = ctx.inputs[1]->shape();
  const Strides3 s = MakeStrides3(like, {ReducedStrides(like, reduced)}, op);
  LaunchBinary(BinaryOp::kScaleFirst, dy.dtype(), dy.raw(), nullptr, out.raw(), out.numel(), s,
               ctx.attrs.GetDouble("scale", 1.0), Env(ctx, op).stream);
}

void ReduceMaxGrad(const KernelContext& ctx) {
  const std::string op = "reduce_max_grad";
  const std::vector<bool> reduced = CheckReduceMaxGrad(ctx);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.inputs[1];
  const Tensor& dy = *ctx.inputs[2];
  Tensor& dx = *ctx.outputs[0];
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
