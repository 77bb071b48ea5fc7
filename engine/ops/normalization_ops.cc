// layer_norm(x, gamma, beta; epsilon = 1e-5) over the last axis of x, and its gradient helper
// layer_norm_grad(x, gamma, dy) -> (dx, dgamma, dbeta). Statistics are per row, so x may be
// split on any leading axis; dgamma and dbeta sum over the rows, so with x split on rows each
// device holds a partial sum of them.
#include <optional>
#include <vector>

#include "engine/graph/graph_builder.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

// Checks x [..., H] (input 0) and the [H] vectors at `vectors`, and attr epsilon.
void CheckLayerNorm(const OpContext& ctx, std::vector<int> vectors) {
  CheckFloat(ctx, 0, "x");
  CheckMinRank(ctx, 0, 1, "x");
  const Shape& x = ctx.inputs[0].shape;
  const Shape hidden{x[x.rank() - 1]};
  for (int i : vectors) {
    CheckSameDType(ctx, 0, i);
    CheckShapeEq(ctx, i, hidden, i == 1 ? "gamma" : "beta");
  }
  if (!(ctx.attrs.GetDouble("epsilon", 1e-5) >= 0)) {
    ThrowInvalid(ctx, "attribute 'epsilon' must be >= 0");
  }
}

OpDef MakeLayerNorm() {
  OpDef def;
  def.type = "layer_norm";
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 3);
    CheckLayerNorm(ctx, {1, 2});
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k + 1 < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k), B(), B()}, {S(k)}));
    }
    sigs.push_back(Sig({B(), P(), P()}, {P()}));  // y is linear in (gamma, beta) together
    sigs.push_back(Sig({B(), B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 8.0); };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt, std::nullopt};
    Attrs attrs;
    attrs.Set("epsilon", op.attrs.GetDouble("epsilon", 1e-5));
    const std::vector<TensorId> g =
        b.Add("layer_norm_grad", {op.inputs[0], op.inputs[1], *dy[0]}, attrs);
    return {g[0], g[1], g[2]};
  };
  return def;
}

// dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma;
// dgamma = sum over rows of dy * xhat; dbeta = sum over rows of dy.
OpDef MakeLayerNormGrad() {
  OpDef def;
  def.type = "layer_norm_grad";
  def.min_inputs = def.max_inputs = 3;
  def.num_outputs = 3;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 3);
    CheckLayerNorm(ctx, {1});
    CheckSameDType(ctx, 0, 2);
    CheckShapeEq(ctx, 2, ctx.inputs[0].shape, "dy");
    return std::vector<TensorMeta>{ctx.inputs[0], ctx.inputs[1], ctx.inputs[1]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k + 1 < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k), B(), S(k)}, {S(k), P(), P()}));
    }
    sigs.push_back(Sig({B(), B(), P()}, {P(), P(), P()}));  // linear in dy
    sigs.push_back(Sig({B(), P(), B()}, {P(), B(), B()}));  // dx linear in gamma
    sigs.push_back(Sig({B(), B(), B()}, {B(), B(), B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    return InputScaledCost(ctx, {ctx.inputs[0], ctx.inputs[1], ctx.inputs[1]}, 12.0);
  };
  return def;
}

}  // namespace

void RegisterNormalizationOps(graph::OpRegistry& registry) {
  registry.Register(MakeLayerNorm());
  registry.Register(MakeLayerNormGrad());
}

}  // namespace twinflow::ops
