// Host side of layer_norm, rms_norm and their gradients on CUDA.
#include "kernels/cpu/normalization_checks.h"
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/normalization_launch.h"

namespace twinflow::kernels::cuda {
namespace {

void LayerNorm(const KernelContext& ctx) {
  const char* op = "layer_norm";
  const LayerNormRows rows = CheckLayerNorm(ctx);
  LaunchLayerNorm(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.inputs[1]->raw(),
                  ctx.inputs[2]->raw(), ctx.outputs[0]->raw(), rows.count, rows.width,
                  ctx.attrs.GetDouble("epsilon", 1e-5), Env(ctx, op).stream);
}

void LayerNormGrad(const KernelContext& ctx) {
  const char* op = "layer_norm_grad";
  const LayerNormRows rows = CheckLayerNormGrad(ctx);
  const Tensor& x = *ctx.inputs[0];
  const CudaEnv& env = Env(ctx, op);
  Scratch stats(
      env, LayerNormGradScratch(rows.count, rows.width) * static_cast<int64_t>(sizeof(double)));
  LaunchLayerNormGrad(x.dtype(), x.raw(), ctx.inputs[1]->raw(), ctx.inputs[2]->raw(),
                      ctx.outputs[0]->raw(), ctx.outputs[1]->raw(), ctx.outputs[2]->raw(),
                      static_cast<double*>(stats.get()), rows.count, rows.width,
                      ctx.attrs.GetDouble("epsilon", 1e-5), env.stream);
}

void RmsNorm(const KernelContext& ctx) {
  const LayerNormRows rows = CheckRmsNorm(ctx);
  LaunchRmsNorm(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.inputs[1]->raw(),
                ctx.outputs[0]->raw(), rows.count, rows.width, ctx.attrs.GetDouble("epsilon", 1e-5),
                Env(ctx, "rms_norm").stream);
}

void RmsNormGrad(const KernelContext& ctx) {
  const LayerNormRows rows = CheckRmsNormGrad(ctx);
  const Tensor& x = *ctx.inputs[0];
  const CudaEnv& env = Env(ctx, "rms_norm_grad");
  Scratch stats(env,
                RmsNormGradScratch(rows.count, rows.width) * static_cast<int64_t>(sizeof(double)));
  LaunchRmsNormGrad(x.dtype(), x.raw(), ctx.inputs[1]->raw(), ctx.inputs[2]->raw(),
                    ctx.outputs[0]->raw(), ctx.outputs[1]->raw(), static_cast<double*>(stats.get()),
                    rows.count, rows.width, ctx.attrs.GetDouble("epsilon", 1e-5), env.stream);
}

}  // namespace

void RegisterNormalizationCudaKernels(KernelRegistry& registry) {
  RegisterCuda(registry, "layer_norm", {DType::kF32, DType::kBF16}, LayerNorm);
  RegisterCuda(registry, "layer_norm_grad", {DType::kF32, DType::kBF16}, LayerNormGrad);
  RegisterCuda(registry, "rms_norm", {DType::kF32, DType::kBF16}, RmsNorm);
  RegisterCuda(registry, "rms_norm_grad", {DType::kF32, DType::kBF16}, RmsNormGrad);
}

}  // namespace twinflow::kernels::cuda
