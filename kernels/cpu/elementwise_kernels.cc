// CPU kernels of the elementwise family: broadcasting add/sub/mul/div, bias_add,
// bias_add_grad, reduce_sum_like and broadcast_like. Sums run in a fixed order (row-major over
// the input) and accumulate floats in double. Integer arithmetic wraps modulo 2^n, so partial
// sums of integers stay exact and overflow is never undefined.
#include <type_traits>

#include "kernels/cpu/elementwise_checks.h"
#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

constexpr std::initializer_list<DType> kNumeric = {DType::kF32, DType::kF64, DType::kI32,
                                                   DType::kI64};
constexpr std::initializer_list<DType> kFloats = {DType::kF32, DType::kF64};

// Floats accumulate in double; integers in uint64_t, wrapping like two's complement.
template <typename T>
using Acc = std::conditional_t<std::is_floating_point_v<T>, double, uint64_t>;

enum class BinaryOp { kAdd, kSub, kMul, kDiv };

template <typename T>
T Apply(BinaryOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    const U ua = static_cast<U>(a), ub = static_cast<U>(b);
    switch (op) {
      case BinaryOp::kAdd:
        return static_cast<T>(static_cast<U>(ua + ub));
      case BinaryOp::kSub:
        return static_cast<T>(static_cast<U>(ua - ub));
      case BinaryOp::kMul:
        return static_cast<T>(static_cast<U>(ua * ub));
      case BinaryOp::kDiv:
        break;  // no integer div kernel is registered
    }
    return 0;
  } else {
    switch (op) {
      case BinaryOp::kAdd:
        return a + b;
      case BinaryOp::kSub:
        return a - b;
      case BinaryOp::kMul:
        return a * b;
      case BinaryOp::kDiv:
        return a / b;
    }
    return 0;
  }
}

void BinaryKernel(const KernelContext& ctx, const std::string& name, BinaryOp op) {
  const std::vector<std::vector<int64_t>> strides = CheckBinary(ctx, name);
  const Tensor& a = *ctx.inputs[0];
  const Tensor& b = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  DispatchNumeric(a.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();
    ForEachBroadcast(out.shape(), strides, [&](int64_t i, const int64_t* offsets) {
      po[i] = Apply(op, pa[offsets[0]], pb[offsets[1]]);
    });
  });
}

void BiasAddKernel(const KernelContext& ctx) {
  const std::string name = "bias_add";
  const int axis = CheckBiasAdd(ctx);
  const Tensor& x = *ctx.inputs[0];
  const Tensor& bias = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  const AxisView v = ViewAround(x.shape(), axis);
  DispatchNumeric(x.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    const T* pb = bias.data<T>();
    T* po = out.data<T>();
    int64_t i = 0;
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t j = 0; j < v.n; ++j) {
        for (int64_t k = 0; k < v.inner; ++k, ++i) po[i] = Apply(BinaryOp::kAdd, px[i], pb[j]);
      }
    }
  });
}

void BiasAddGradKernel(const KernelContext& ctx) {
  const std::string name = "bias_add_grad";
  const int axis = CheckBiasAddGrad(ctx);
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  const AxisView v = ViewAround(dy.shape(), axis);
  DispatchNumeric(dy.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    const T* pd = dy.data<T>();
    std::vector<Acc<T>> acc(v.n, 0);
    int64_t i = 0;
    for (int64_t o = 0; o < v.outer; ++o) {
      for (int64_t j = 0; j < v.n; ++j) {
        for (int64_t k = 0; k < v.inner; ++k, ++i) acc[j] += static_cast<Acc<T>>(pd[i]);
      }
    }
    for (int64_t j = 0; j < v.n; ++j) out.data<T>()[j] = static_cast<T>(acc[j]);
  });
}

// reduce_sum_like(dy, like): dy summed over the axes `like` broadcasts, to like's shape.
void ReduceSumLikeKernel(const KernelContext& ctx) {
  const std::string name = "reduce_sum_like";
  const std::vector<std::vector<int64_t>> strides = {CheckReduceSumLike(ctx)};
  const Tensor& dy = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  DispatchNumeric(dy.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    const T* pd = dy.data<T>();
    std::vector<Acc<T>> acc(out.numel(), 0);
    ForEachBroadcast(dy.shape(), strides, [&](int64_t i, const int64_t* offsets) {
      acc[offsets[0]] += static_cast<Acc<T>>(pd[i]);
    });
    T* po = out.data<T>();
    for (size_t j = 0; j < acc.size(); ++j) po[j] = static_cast<T>(acc[j]);
  });
}

void BroadcastLikeKernel(const KernelContext& ctx) {
  const std::string name = "broadcast_like";
  const std::vector<std::vector<int64_t>> strides = {CheckBroadcastLike(ctx)};
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  DispatchNumeric(x.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    ForEachBroadcast(out.shape(), strides,
                     [&](int64_t i, const int64_t* offsets) { po[i] = px[offsets[0]]; });
  });
}

}  // namespace

void RegisterScalarKernels(KernelRegistry& registry);  // scalar_kernels.cc

void RegisterElementwiseKernels(KernelRegistry& registry) {
  const std::pair<const char*, BinaryOp> binaries[] = {
      {"add", BinaryOp::kAdd}, {"sub", BinaryOp::kSub}, {"mul", BinaryOp::kMul}};
  for (const auto& binary : binaries) {
    const std::string type = binary.first;
    const BinaryOp op = binary.second;  // a variable: Clang 14 cannot capture bindings
    RegisterCpu(registry, type, kNumeric,
                [type, op](const KernelContext& ctx) { BinaryKernel(ctx, type, op); });
  }
  RegisterCpu(registry, "div", kFloats,
              [](const KernelContext& ctx) { BinaryKernel(ctx, "div", BinaryOp::kDiv); });
  RegisterCpu(registry, "bias_add", kNumeric, BiasAddKernel);
  RegisterCpu(registry, "bias_add_grad", kNumeric, BiasAddGradKernel);
  RegisterCpu(registry, "reduce_sum_like", kNumeric, ReduceSumLikeKernel);
  RegisterCpu(registry, "broadcast_like", kNumeric, BroadcastLikeKernel);
  RegisterScalarKernels(registry);
}

}  // namespace twinflow::kernels
