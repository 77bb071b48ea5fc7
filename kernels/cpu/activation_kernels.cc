// CPU kernels of the activation family (f32, f64): relu, gelu (tanh approximation), tanh, exp
// and relu_grad(dy, y), gelu_grad(dy, x), tanh_grad(dy, y). Values are computed in double and
// rounded once.
#include <cmath>
#include <numbers>

#include "kernels/cpu/kernel_families.h"
#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

constexpr double kGeluC = 0.044715;
const double kSqrt2OverPi = std::sqrt(2.0 / std::numbers::pi);

double Gelu(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + kGeluC * x * x * x));
  return 0.5 * x * (1.0 + t);
}

double GeluSlope(double x) {
  const double t = std::tanh(kSqrt2OverPi * (x + kGeluC * x * x * x));
  const double du = kSqrt2OverPi * (1.0 + 3.0 * kGeluC * x * x);
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du;
}

template <typename F>
void UnaryKernel(const KernelContext& ctx, const std::string& name, F f) {
  CheckArity(ctx, 1, 1, name);
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  CheckDType(out, x.dtype(), name, "output");
  CheckShape(out, x.shape(), name, "output");
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* px = x.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0, end = x.numel(); i < end; ++i) po[i] = static_cast<T>(f(static_cast<double>(px[i])));
  };
  if (x.dtype() == DType::kF32) {
    run(float{});
  } else if (x.dtype() == DType::kF64) {
    run(double{});
  } else {
    throw InvalidArgumentError(name + ": no kernel for dtype " + DTypeName(x.dtype()));
  }
}

// out = f(dy, forward tensor), both of the output's shape.
template <typename F>
void GradKernel(const KernelContext& ctx, const std::string& name, F f) {
  CheckArity(ctx, 2, 1, name);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& fwd = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  CheckDType(fwd, dy.dtype(), name, "forward input");
  CheckDType(out, dy.dtype(), name, "output");
  CheckShape(fwd, dy.shape(), name, "forward input");
  CheckShape(out, dy.shape(), name, "output");
  auto run = [&](auto zero) {
    using T = decltype(zero);
    const T* pd = dy.data<T>();
    const T* pf = fwd.data<T>();
    T* po = out.data<T>();
    for (int64_t i = 0, end = dy.numel(); i < end; ++i) {
      po[i] = static_cast<T>(f(static_cast<double>(pd[i]), static_cast<double>(pf[i])));
    }
  };
  if (dy.dtype() == DType::kF32) {
    run(float{});
  } else if (dy.dtype() == DType::kF64) {
    run(double{});
  } else {
    throw InvalidArgumentError(name + ": no kernel for dtype " + DTypeName(dy.dtype()));
  }
}

template <typename F>
void RegisterUnary(KernelRegistry& registry, const std::string& name, F f) {
  RegisterCpu(registry, name, {DType::kF32, DType::kF64},
              [name, f](const KernelContext& ctx) { UnaryKernel(ctx, name, f); });
}

template <typename F>
void RegisterGrad(KernelRegistry& registry, const std::string& name, F f) {
  RegisterCpu(registry, name, {DType::kF32, DType::kF64},
              [name, f](const KernelContext& ctx) { GradKernel(ctx, name, f); });
}

}  // namespace

void RegisterActivationKernels(KernelRegistry& registry) {
  RegisterUnary(registry, "relu", [](double x) { return x > 0 ? x : 0.0; });
  RegisterUnary(registry, "gelu", Gelu);
  RegisterUnary(registry, "tanh", [](double x) { return std::tanh(x); });
  RegisterUnary(registry, "exp", [](double x) { return std::exp(x); });
  RegisterGrad(registry, "relu_grad", [](double dy, double y) { return y > 0 ? dy : 0.0; });
  RegisterGrad(registry, "gelu_grad", [](double dy, double x) { return dy * GeluSlope(x); });
  RegisterGrad(registry, "tanh_grad", [](double dy, double y) { return dy * (1.0 - y * y); });
}

}  // namespace twinflow::kernels
