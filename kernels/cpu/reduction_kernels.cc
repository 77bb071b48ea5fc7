// CPU kernels of the reduction family: reduce_sum, reduce_mean, reduce_max, broadcast_reduced_like,
// reduce_max_grad. Sums accumulate in double in row-major input order, so results do not
// depend on anything but the physical input.
#include <limits>
#include <vector>

#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"
#include "kernels/cpu/reduction_checks.h"

namespace twinflow::kernels {
namespace {

enum class Reduce { kSum, kMean, kMax };

template <typename T>
void ReduceKernel(const KernelContext& ctx, Reduce kind, const char* op) {
  const std::vector<bool> reduced = CheckReduce(ctx, op);
  const Tensor& x = *ctx.inputs[0];
  Tensor& y = *ctx.outputs[0];
  const T* in = x.data<T>();
  T* out = y.data<T>();
  if (kind == Reduce::kMax) {
    // An empty slice (an uneven split) yields the identity of max.
    for (int64_t i = 0, end = y.numel(); i < end; ++i) out[i] = -std::numeric_limits<T>::infinity();
    ForEachReduced(x.shape(), reduced, [&](int64_t i, int64_t o) {
      if (in[i] > out[o] || in[i] != in[i]) out[o] = in[i];  // a NaN wins and stays
    });
    return;
  }
  std::vector<double> acc(y.numel(), 0.0);
  ForEachReduced(x.shape(), reduced, [&](int64_t i, int64_t o) { acc[o] += in[i]; });
  const double scale = kind == Reduce::kMean ? ReduceMeanScale(ctx, reduced) : 1.0;
  for (int64_t o = 0, end = y.numel(); o < end; ++o) out[o] = static_cast<T>(acc[o] * scale);
}

template <typename T>
void BroadcastReducedLikeKernel(const KernelContext& ctx) {
  const std::vector<bool> reduced = CheckBroadcastReducedLike(ctx);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const Shape& like = ctx.inputs[1]->shape();
  const T scale = static_cast<T>(ctx.attrs.GetDouble("scale", 1.0));
  const T* in = dy.data<T>();
  T* o = out.data<T>();
  ForEachReduced(like, reduced, [&](int64_t i, int64_t r) { o[i] = in[r] * scale; });
}

template <typename T>
void ReduceMaxGradKernel(const KernelContext& ctx) {
  const std::vector<bool> reduced = CheckReduceMaxGrad(ctx);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& y = *ctx.inputs[1];
  const Tensor& dy = *ctx.inputs[2];
  Tensor& dx = *ctx.outputs[0];
  const T* xs = x.data<T>();
  const T* ys = y.data<T>();
  const T* dys = dy.data<T>();
  T* out = dx.data<T>();
  // dy to the maxima, dy * 0 elsewhere (a NaN or infinite dy stays non-finite). Where x or
  // its maximum is NaN the mask is undefined, and so is the gradient: NaN.
  ForEachReduced(x.shape(), reduced, [&](int64_t i, int64_t r) {
    if (xs[i] == ys[r]) {
      out[i] = dys[r];
    } else if (xs[i] != xs[i] || ys[r] != ys[r]) {
      out[i] = xs[i] + ys[r];
    } else {
      out[i] = dys[r] * T(0) + T(0);
    }
  });
}

template <typename T>
void RegisterFor(KernelRegistry& registry, DType dtype) {
  registry.Register({"reduce_sum", DeviceType::kCpu, dtype}, [](const KernelContext& ctx) {
    ReduceKernel<T>(ctx, Reduce::kSum, "reduce_sum");
  });
  registry.Register({"reduce_mean", DeviceType::kCpu, dtype}, [](const KernelContext& ctx) {
    ReduceKernel<T>(ctx, Reduce::kMean, "reduce_mean");
  });
  registry.Register({"reduce_max", DeviceType::kCpu, dtype}, [](const KernelContext& ctx) {
    ReduceKernel<T>(ctx, Reduce::kMax, "reduce_max");
  });
  registry.Register({"broadcast_reduced_like", DeviceType::kCpu, dtype},
                    BroadcastReducedLikeKernel<T>);
  registry.Register({"reduce_max_grad", DeviceType::kCpu, dtype}, ReduceMaxGradKernel<T>);
}

}  // namespace

void RegisterReductionKernels(KernelRegistry& registry) {
  RegisterFor<float>(registry, DType::kF32);
  RegisterFor<double>(registry, DType::kF64);
}

}  // namespace twinflow::kernels
