// One definition of the norm kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/normalization_checks.h"

#include <string>
#include <vector>

#include "kernels/cpu/kernel_helpers.h"

namespace twinflow::kernels {
namespace {

// The row view of input 0; inputs `vectors` (gamma, beta) must be [width] of x's dtype.
LayerNormRows CheckRows(const KernelContext& ctx, const char* op, std::vector<int> vectors) {
  const Tensor& x = *ctx.inputs[0];
  if (x.shape().rank() == 0) throw ShapeError(std::string(op) + ": x must have rank >= 1");
  LayerNormRows rows;
  rows.width = x.shape()[x.shape().rank() - 1];
  rows.count = rows.width == 0 ? 0 : x.numel() / rows.width;
  for (int i : vectors) {
    CheckShape(*ctx.inputs[i], Shape{rows.width}, op, "gamma/beta");
    CheckDType(*ctx.inputs[i], x.dtype(), op, "gamma/beta");
  }
  return rows;
}

// A norm: x and the [width] vectors at `vectors` in, y like x out.
LayerNormRows CheckNorm(const KernelContext& ctx, const char* op, std::vector<int> vectors) {
  CheckArity(ctx, static_cast<int>(vectors.size()) + 1, 1, op);
  const LayerNormRows rows = CheckRows(ctx, op, std::move(vectors));
  CheckShape(*ctx.outputs[0], ctx.inputs[0]->shape(), op, "output");
  CheckDType(*ctx.outputs[0], ctx.inputs[0]->dtype(), op, "output");
  return rows;
}

// A norm's gradient: (x, gamma, dy) in, dx and `vectors` [width] gradients out.
LayerNormRows CheckNormGrad(const KernelContext& ctx, const char* op, int vectors) {
  CheckArity(ctx, 3, vectors + 1, op);
  const LayerNormRows rows = CheckRows(ctx, op, {1});
  const Tensor& x = *ctx.inputs[0];
  CheckShape(*ctx.inputs[2], x.shape(), op, "dy");
  CheckDType(*ctx.inputs[2], x.dtype(), op, "dy");
  CheckShape(*ctx.outputs[0], x.shape(), op, "dx");
  for (const Tensor* t : ctx.outputs) CheckDType(*t, x.dtype(), op, "every output");
  for (int i = 1; i <= vectors; ++i) {
    CheckShape(*ctx.outputs[i], Shape{rows.width}, op, i == 1 ? "dgamma" : "dbeta");
  }
  return rows;
}

}  // namespace

LayerNormRows CheckLayerNorm(const KernelContext& ctx) {
  return CheckNorm(ctx, "layer_norm", {1, 2});
}
LayerNormRows CheckLayerNormGrad(const KernelContext& ctx) {
  return CheckNormGrad(ctx, "layer_norm_grad", 2);
}
LayerNormRows CheckRmsNorm(const KernelContext& ctx) { return CheckNorm(ctx, "rms_norm", {1}); }
LayerNormRows CheckRmsNormGrad(const KernelContext& ctx) {
  return CheckNormGrad(ctx, "rms_norm_grad", 1);
}

}  // namespace twinflow::kernels
