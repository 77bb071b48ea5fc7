// Host side of layer_norm and layer_norm_grad on CUDA.
#include "kernels/cpu/layer_norm_checks.h"
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
  Scratch stats(env, 2 * rows.count * static_cast<int64_t>(sizeof(double)));
  LaunchLayerNormGrad(x.dtype(), x.raw(), ctx.inputs[1]->raw(), ctx.inputs[2]->raw(),
                      ctx.outputs[0]->raw(), ctx.outputs[1]->raw(), ctx.outputs[2]->raw(),
                      static_cast<double*>(stats.get()), rows.count, rows.width,
                      ctx.attrs.GetDouble("epsilon", 1e-5), env.stream);
}

}  // namespace

void RegisterNormalizationCudaKernels(KernelRegistry& registry) {
  RegisterCuda(registry, "layer_norm", {DType::kF32, DType::kBF16}, LayerNorm);
  RegisterCuda(registry, "layer_norm_grad", {DType::kF32, DType::kBF16}, LayerNormGrad);
}

}  // namespace twinflow::kernels::cuda
