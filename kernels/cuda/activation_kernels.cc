// Host side of the CUDA activations: relu, gelu, tanh, exp, silu and their gradients.
#include "kernels/cuda/activation_launch.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"

namespace twinflow::kernels::cuda {
namespace {

void Unary(const KernelContext& ctx, const std::string& name, Activation op) {
  CheckMapsInput(ctx, 1, name);
  const Tensor& x = *ctx.inputs[0];
  Tensor& out = *ctx.outputs[0];
  LaunchActivation(op, x.dtype(), x.raw(), nullptr, out.raw(), x.numel(), Env(ctx, name).stream);
}

void Grad(const KernelContext& ctx, const std::string& name, Activation op) {
  CheckGradOfElementwise(ctx, name);
  const Tensor& dy = *ctx.inputs[0];
  const Tensor& fwd = *ctx.inputs[1];
  Tensor& out = *ctx.outputs[0];
  LaunchActivation(op, dy.dtype(), dy.raw(), fwd.raw(), out.raw(), dy.numel(),
                   Env(ctx, name).stream);
}

}  // namespace

void RegisterActivationCudaKernels(KernelRegistry& registry) {
  const std::pair<const char*, Activation> unary[] = {{"relu", Activation::kRelu},
                                                      {"gelu", Activation::kGelu},
                                                      {"tanh", Activation::kTanh},
                                                      {"exp", Activation::kExp},
                                                      {"silu", Activation::kSilu}};
  for (const auto& [name, op] : unary) {
    const std::string type = name;
    RegisterCuda(registry, type, {DType::kF32, DType::kBF16},
                 [type, op](const KernelContext& ctx) { Unary(ctx, type, op); });
  }
  const std::pair<const char*, Activation> grads[] = {{"relu_grad", Activation::kReluGrad},
                                                      {"gelu_grad", Activation::kGeluGrad},
                                                      {"tanh_grad", Activation::kTanhGrad},
                                                      {"silu_grad", Activation::kSiluGrad}};
  for (const auto& [name, op] : grads) {
    const std::string type = name;
    RegisterCuda(registry, type, {DType::kF32, DType::kBF16},
                 [type, op](const KernelContext& ctx) { Grad(ctx, type, op); });
  }
}

}  // namespace twinflow::kernels::cuda
