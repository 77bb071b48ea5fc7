// layer_norm(x, gamma, beta; epsilon = 1e-5) over the last axis of x, and its gradient helper
// layer_norm_grad(x, gamma, dy) -> (dx, dgamma, dbeta); rms_norm(x, gamma; epsilon = 1e-5)
// (Zhang and Sennrich 2019, Llama's norm: x / sqrt(mean(x^2) + epsilon) * gamma, no centring
// and no beta) and rms_norm_grad(x, gamma, dy) -> (dx, dgamma). Statistics are per row, so x
// may be split on any leading axis; the vector gradients sum over the rows, so with x split on
// rows each device holds a partial sum of them.
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
  def.kernel_class = graph::KernelClass::kRowwise;
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

// Signatures of a norm's gradient: `vectors` is how many [H] gradients follow dx.
std::vector<SbpSignature> NormGradSignatures(const OpContext& ctx, int vectors) {
  std::vector<SbpSignature> sigs;
  const auto with = [&](sbp::Sbp dx, sbp::Sbp dvector) {
    std::vector<sbp::Sbp> out{dx};
    out.insert(out.end(), vectors, dvector);
    return out;
  };
  for (int k = 0; k + 1 < ctx.inputs[0].shape.rank(); ++k) {
    sigs.push_back(Sig({S(k), B(), S(k)}, with(S(k), P())));
  }
  sigs.push_back(Sig({B(), B(), P()}, with(P(), P())));  // linear in dy
  sigs.push_back(Sig({B(), P(), B()}, with(P(), B())));  // dx linear in gamma; the rest not
  sigs.push_back(Sig({B(), B(), B()}, with(B(), B())));
  return sigs;
}

// dx = inv_std * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * gamma;
// dgamma = sum over rows of dy * xhat; dbeta = sum over rows of dy.
OpDef MakeLayerNormGrad() {
  OpDef def;
  def.type = "layer_norm_grad";
  def.kernel_class = graph::KernelClass::kRowwise;
  def.min_inputs = def.max_inputs = 3;
  def.num_outputs = 3;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 3);
    CheckLayerNorm(ctx, {1});
    CheckSameDType(ctx, 0, 2);
    CheckShapeEq(ctx, 2, ctx.inputs[0].shape, "dy");
    return std::vector<TensorMeta>{ctx.inputs[0], ctx.inputs[1], ctx.inputs[1]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) { return NormGradSignatures(ctx, 2); };
  def.cost = [](const OpContext& ctx) {
    return InputScaledCost(ctx, {ctx.inputs[0], ctx.inputs[1], ctx.inputs[1]}, 12.0);
  };
  return def;
}

OpDef MakeRmsNorm() {
  OpDef def;
  def.type = "rms_norm";
  def.kernel_class = graph::KernelClass::kRowwise;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckLayerNorm(ctx, {1});
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k + 1 < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k), B()}, {S(k)}));
    }
    sigs.push_back(Sig({B(), P()}, {P()}));  // y is linear in gamma
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 5.0); };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    Attrs attrs;
    attrs.Set("epsilon", op.attrs.GetDouble("epsilon", 1e-5));
    const std::vector<TensorId> g =
        b.Add("rms_norm_grad", {op.inputs[0], op.inputs[1], *dy[0]}, attrs);
    return {g[0], g[1]};
  };
  return def;
}

// With r = 1/sqrt(mean(x^2) + eps), xhat = x r and g = dy * gamma:
// dx = r * (g - xhat * mean(g * xhat)); dgamma = sum over rows of dy * xhat.
OpDef MakeRmsNormGrad() {
  OpDef def;
  def.type = "rms_norm_grad";
  def.kernel_class = graph::KernelClass::kRowwise;
  def.min_inputs = def.max_inputs = 3;
  def.num_outputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 3);
    CheckLayerNorm(ctx, {1});
    CheckSameDType(ctx, 0, 2);
    CheckShapeEq(ctx, 2, ctx.inputs[0].shape, "dy");
    return std::vector<TensorMeta>{ctx.inputs[0], ctx.inputs[1]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) { return NormGradSignatures(ctx, 1); };
  def.cost = [](const OpContext& ctx) {
    return InputScaledCost(ctx, {ctx.inputs[0], ctx.inputs[1]}, 9.0);
  };
  return def;
}

}  // namespace

void RegisterNormalizationOps(graph::OpRegistry& registry) {
  registry.Register(MakeLayerNorm());
  registry.Register(MakeLayerNormGrad());
  registry.Register(MakeRmsNorm());
  registry.Register(MakeRmsNormGrad());
}

}  // namespace twinflow::ops
