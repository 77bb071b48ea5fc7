// CPU kernels of the elementwise family's unary ops (registered by RegisterElementwiseKernels):
// scalar_add, scalar_mul, scalar_pow, identity and cast. Conversions to integers truncate
// toward zero and saturate (NaN gives 0), so no value makes them undefined.
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

template <typename To>
To FromDouble(double v) {
  if constexpr (std::is_integral_v<To>) {
    if (std::isnan(v)) return 0;
    if (v <= static_cast<double>(std::numeric_limits<To>::min())) {
      return std::numeric_limits<To>::min();
    }
    if (v >= static_cast<double>(std::numeric_limits<To>::max())) {
      return std::numeric_limits<To>::max();
    }
    return static_cast<To>(v);
  } else {
    return static_cast<To>(v);
  }
}

template <typename To, typename From>
To Convert(From v) {
  if constexpr (std::is_integral_v<To> && std::is_integral_v<From>) {
    return static_cast<To>(v);  // modulo 2^n (well defined since C++20)
  } else {
    return FromDouble<To>(static_cast<double>(v));
  }
}

void CheckUnary(const KernelContext& ctx, const std::string& name, DType out_dtype) {
  CheckArity(ctx, 1, 1, name);
  CheckDType(*ctx.outputs[0], out_dtype, name, "output");
  CheckShape(*ctx.outputs[0], ctx.inputs[0]->shape(), name, "output");
}

// out = f(x) computed in double (the attribute is a double) and converted back.
template <typename F>
void ScalarKernel(const KernelContext& ctx, const std::string& name, F f) {
  CheckUnary(ctx, name, ctx.inputs[0]->dtype());
  const Tensor& x = *ctx.inputs[0];
  DispatchNumeric(x.dtype(), name, [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = ctx.outputs[0]->data<T>();
    for (int64_t i = 0, end = x.numel(); i < end; ++i) {
      if constexpr (std::is_same_v<T, float>) {
        po[i] = static_cast<float>(f(static_cast<double>(px[i])));
      } else {
        po[i] = FromDouble<T>(f(static_cast<double>(px[i])));
      }
    }
  });
}

void IdentityKernel(const KernelContext& ctx) {
  CheckUnary(ctx, "identity", ctx.inputs[0]->dtype());
  if (ctx.inputs[0]->nbytes() > 0) {
    std::memcpy(ctx.outputs[0]->raw(), ctx.inputs[0]->raw(), ctx.inputs[0]->nbytes());
  }
}

void CastKernel(const KernelContext& ctx) {
  const DType to = ParseDType(ctx.attrs.GetString("dtype"));
  CheckUnary(ctx, "cast", to);
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  if (IsStorageOnly(x.dtype()) || IsStorageOnly(to)) {
    for (int64_t i = 0, end = x.numel(); i < end; ++i) {
      double v = x.GetDouble(i);
      if (to == DType::kI32) v = FromDouble<int32_t>(v);
      if (to == DType::kI64) v = static_cast<double>(FromDouble<int64_t>(v));
      out.SetDouble(i, v);
    }
    return;
  }
  DispatchNumeric(x.dtype(), "cast", [&](auto from_zero) {
    using From = decltype(from_zero);
    DispatchNumeric(to, "cast", [&](auto to_zero) {
      using To = decltype(to_zero);
      const From* px = x.data<From>();
      To* po = out.data<To>();
      for (int64_t i = 0, end = x.numel(); i < end; ++i) po[i] = Convert<To>(px[i]);
    });
  });
}

}  // namespace

void RegisterScalarKernels(KernelRegistry& registry) {
  const auto numeric = {DType::kF32, DType::kF64, DType::kI32, DType::kI64};
  RegisterCpu(registry, "scalar_add", numeric, [](const KernelContext& ctx) {
    const double value = ctx.attrs.GetDouble("value");
    ScalarKernel(ctx, "scalar_add", [value](double x) { return x + value; });
  });
  RegisterCpu(registry, "scalar_mul", numeric, [](const KernelContext& ctx) {
    const double value = ctx.attrs.GetDouble("value");
    ScalarKernel(ctx, "scalar_mul", [value](double x) { return x * value; });
  });
  RegisterCpu(registry, "scalar_pow", {DType::kF32, DType::kF64}, [](const KernelContext& ctx) {
    const double exponent = ctx.attrs.GetDouble("exponent");
    ScalarKernel(ctx, "scalar_pow", [exponent](double x) { return std::pow(x, exponent); });
  });
  const auto all = {DType::kF32, DType::kF64, DType::kI32, DType::kI64, DType::kBF16, DType::kF16};
  RegisterCpu(registry, "identity", all, IdentityKernel);
  RegisterCpu(registry, "cast", all, CastKernel);
}

}  // namespace twinflow::kernels
