// Host side of layer_norm and layer_norm_grad on CUDA.
#include "kernels/cuda/cuda_kernel_families.h"
#include "kernels/cuda/host_helpers.h"
#include "kernels/cuda/normalization_launch.h"

namespace twinflow::kernels::cuda {
namespace {

struct Rows {
  int64_t count = 0;
  int64_t width = 0;
};

Rows CheckLayerNorm(const KernelContext& ctx, const char* op, std::vector<int> vectors) {
  const Tensor& x = *ctx.inputs[0];
  if (x.shape().rank() == 0) throw ShapeError(std::string(op) + ": x must have rank >= 1");
  Rows rows;
  rows.width = x.shape()[x.shape().rank() - 1];
  rows.count = rows.width == 0 ? 0 : x.numel() / rows.width;
  for (int i : vectors) {
    CheckShape(*ctx.inputs[i], Shape{rows.width}, op, "gamma/beta");
    CheckDType(*ctx.inputs[i], x.dtype(), op, "gamma/beta");
  }
  return rows;
}

void LayerNorm(const KernelContext& ctx) {
  const char* op = "layer_norm";
  CheckArity(ctx, 3, 1, op);
  const Rows rows = CheckLayerNorm(ctx, op, {1, 2});
  CheckShape(*ctx.outputs[0], ctx.inputs[0]->shape(), op, "output");
  CheckDType(*ctx.outputs[0], ctx.inputs[0]->dtype(), op, "output");
  LaunchLayerNorm(ctx.inputs[0]->dtype(), ctx.inputs[0]->raw(), ctx.inputs[1]->raw(),
                  ctx.inputs[2]->raw(), ctx.outputs[0]->raw(), rows.count, rows.width,
                  ctx.attrs.GetDouble("epsilon", 1e-5), Env(ctx, op).stream);
}

void LayerNormGrad(const KernelContext& ctx) {
  const char* op = "layer_norm_grad";
  CheckArity(ctx, 3, 3, op);
  const Rows rows = CheckLayerNorm(ctx, op, {1});
  const Tensor& x = *ctx.inputs[0];
  CheckShape(*ctx.inputs[2], x.shape(), op, "dy");
  CheckDType(*ctx.inputs[2], x.dtype(), op, "dy");
  CheckShape(*ctx.outputs[0], x.shape(), op, "dx");
  for (const Tensor* t : ctx.outputs) CheckDType(*t, x.dtype(), op, "every output");
  CheckShape(*ctx.outputs[1], Shape{rows.width}, op, "dgamma");
  CheckShape(*ctx.outputs[2], Shape{rows.width}, op, "dbeta");
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
