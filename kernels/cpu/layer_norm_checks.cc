// One definition of the layer-norm kernels' checks, for the CPU and CUDA kernels alike.
#include "kernels/cpu/layer_norm_checks.h"

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

}  // namespace

LayerNormRows CheckLayerNorm(const KernelContext& ctx) {
  const char* op = "layer_norm";
  CheckArity(ctx, 3, 1, op);
  const LayerNormRows rows = CheckRows(ctx, op, {1, 2});
  CheckShape(*ctx.outputs[0], ctx.inputs[0]->shape(), op, "output");
  CheckDType(*ctx.outputs[0], ctx.inputs[0]->dtype(), op, "output");
  return rows;
}

LayerNormRows CheckLayerNormGrad(const KernelContext& ctx) {
  const char* op = "layer_norm_grad";
  CheckArity(ctx, 3, 3, op);
  const LayerNormRows rows = CheckRows(ctx, op, {1});
  const Tensor& x = *ctx.inputs[0];
  CheckShape(*ctx.inputs[2], x.shape(), op, "dy");
  CheckDType(*ctx.inputs[2], x.dtype(), op, "dy");
  CheckShape(*ctx.outputs[0], x.shape(), op, "dx");
  for (const Tensor* t : ctx.outputs) CheckDType(*t, x.dtype(), op, "every output");
  CheckShape(*ctx.outputs[1], Shape{rows.width}, op, "dgamma");
  CheckShape(*ctx.outputs[2], Shape{rows.width}, op, "dbeta");
  return rows;
}

}  // namespace twinflow::kernels
