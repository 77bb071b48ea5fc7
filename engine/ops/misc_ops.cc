// The misc op family: source ops (input, variable), constants shaped like a tensor
// (fill_like, zeros_like, ones_like, causal_mask), assign, seeded dropout, and recompute_gate
// (activation recomputation's ordering). The optimizer
// update ops are registered from here too (update_ops.cc) since they share this family's case.
#include <optional>
#include <string>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"
#include "engine/ops/update_ops.h"

namespace twinflow::ops {
namespace {

using graph::OpCost;

// ---- input and variable -----------------------------------------------------------------

TensorMeta SourceMeta(const OpContext& ctx) {
  CheckInputCount(ctx, 0);
  const std::vector<int64_t>& dims = ctx.attrs.GetInts("shape");
  for (int64_t d : dims) {
    if (d < 0) ThrowShape(ctx, "negative extent " + std::to_string(d) + " in attribute 'shape'");
  }
  return TensorMeta{Shape(dims), ParseDType(ctx.attrs.GetString("dtype"))};
}

std::vector<TensorMeta> InferInput(const OpContext& ctx) { return {SourceMeta(ctx)}; }

std::vector<TensorMeta> InferVariable(const OpContext& ctx) {
  TensorMeta meta = SourceMeta(ctx);
  if (ctx.attrs.Has("init")) {
    const std::string& init = ctx.attrs.GetString("init");
    if (init != "normal" && init != "uniform" && init != "zeros" && init != "ones" &&
        init != "constant") {
      ThrowInvalid(ctx, "attribute 'init' = '" + init +
                            "' is not one of normal, uniform, zeros, ones, constant");
    }
    if (init == "constant") ctx.attrs.GetDouble("value");  // present and a number
    if ((init == "normal" || init == "uniform") && IsStorageOnly(meta.dtype)) {
      ThrowInvalid(ctx, std::string("random init of a ") + DTypeName(meta.dtype) + " variable");
    }
  }
  if (ctx.attrs.GetDouble("std", 1.0) < 0) ThrowInvalid(ctx, "attribute 'std' is negative");
  if (ctx.attrs.GetDouble("scale", 1.0) < 0) ThrowInvalid(ctx, "attribute 'scale' is negative");
  ctx.attrs.GetInt("seed", 0);  // type check
  return {meta};
}

// Any split of the output, or the whole of it: the kernel fills whatever region it is given.
std::vector<SbpSignature> SourceSignatures(const OpContext& ctx, int64_t) {
  const int rank = static_cast<int>(ctx.attrs.GetInts("shape").size());
  std::vector<SbpSignature> sigs;
  for (int k = 0; k < rank; ++k) sigs.push_back(SbpSignature{{}, {S(k)}});
  sigs.push_back(SbpSignature{{}, {B()}});
  return sigs;
}

OpCost SourceCost(const OpContext& ctx) {
  OpCost cost;
  cost.bytes_written = Bytes(SourceMeta(ctx));
  return cost;
}

// ---- fill_like, zeros_like, ones_like ---------------------------------------------------

std::vector<TensorMeta> InferLike(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  if (ctx.type == "fill_like") ctx.attrs.GetDouble("value");
  return {ctx.inputs[0]};
}

// The output depends on the input's shape only, so a partial input gives a whole output.
std::vector<SbpSignature> LikeSignatures(const OpContext& ctx, int64_t) {
  std::vector<SbpSignature> sigs;
  for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) sigs.push_back(SbpSignature{{S(k)}, {S(k)}});
  sigs.push_back(SbpSignature{{P()}, {B()}});
  sigs.push_back(SbpSignature{{B()}, {B()}});
  return sigs;
}

OpCost LikeCost(const OpContext& ctx) {
  OpCost cost;
  cost.bytes_written = Bytes(ctx.inputs[0]);
  return cost;
}

Grads NoGradient(GraphBuilder&, const OpNode& op, const Grads&) { return Grads(op.inputs.size()); }

// ---- causal_mask ------------------------------------------------------------------------

// causal_mask(scores): the [S, S] additive mask for scores [..., S, S]: 0 where the key is at
// or before the query, -1e9 after it.
std::vector<TensorMeta> InferCausalMask(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  CheckFloat(ctx, 0);
  const Shape& s = ctx.inputs[0].shape;
  if (s.rank() < 2 || s[s.rank() - 1] != s[s.rank() - 2]) {
    ThrowShape(ctx, "input " + s.ToString() + " must end in two equal extents [..., S, S]");
  }
  const int64_t n = s[s.rank() - 1];
  return {TensorMeta{Shape{n, n}, ctx.inputs[0].dtype}};
}

std::vector<SbpSignature> CausalMaskSignatures(const OpContext& ctx, int64_t) {
  const int rank = ctx.inputs[0].shape.rank();
  std::vector<SbpSignature> sigs;
  sigs.push_back(SbpSignature{{S(rank - 2)}, {S(0)}});
  sigs.push_back(SbpSignature{{S(rank - 1)}, {S(1)}});
  for (int k = 0; k < rank - 2; ++k) sigs.push_back(SbpSignature{{S(k)}, {B()}});
  sigs.push_back(SbpSignature{{P()}, {B()}});
  sigs.push_back(SbpSignature{{B()}, {B()}});
  return sigs;
}

OpCost CausalMaskCost(const OpContext& ctx) {
  OpCost cost;
  cost.bytes_written = Bytes(InferCausalMask(ctx)[0]);
  return cost;
}

// ---- assign -----------------------------------------------------------------------------

std::vector<TensorMeta> InferAssign(const OpContext& ctx) {
  CheckInputCount(ctx, 2);
  if (!(ctx.inputs[0] == ctx.inputs[1])) {
    ThrowShape(ctx, "value " + ctx.inputs[1].ToString() + " does not match variable " +
                        ctx.inputs[0].ToString());
  }
  return {};
}

std::vector<SbpSignature> AssignSignatures(const OpContext& ctx, int64_t) {
  std::vector<SbpSignature> sigs;
  for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k)
    sigs.push_back(SbpSignature{{S(k), S(k)}, {}});
  sigs.push_back(SbpSignature{{B(), B()}, {}});
  return sigs;
}

OpCost AssignCost(const OpContext& ctx) {
  OpCost cost;
  cost.bytes_read = Bytes(ctx.inputs[1]);
  cost.bytes_written = Bytes(ctx.inputs[0]);
  return cost;
}

// ---- dropout ----------------------------------------------------------------------------

std::vector<TensorMeta> InferDropout(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  CheckFloat(ctx, 0);
  const double rate = ctx.attrs.GetDouble("rate");
  if (!(rate >= 0 && rate < 1)) {
    ThrowInvalid(ctx, "attribute 'rate' = " + std::to_string(rate) + " is not in [0, 1)");
  }
  ctx.attrs.GetInt("seed");
  return {ctx.inputs[0]};
}

// The mask depends on the logical index only, and y is linear in x.
std::vector<SbpSignature> DropoutSignatures(const OpContext& ctx, int64_t) {
  std::vector<SbpSignature> sigs;
  for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) sigs.push_back(SbpSignature{{S(k)}, {S(k)}});
  sigs.push_back(SbpSignature{{P()}, {P()}});
  sigs.push_back(SbpSignature{{B()}, {B()}});
  return sigs;
}

Grads DropoutGradient(GraphBuilder& b, const OpNode& op, const Grads& dy) {
  if (!dy[0]) return {std::nullopt};
  const Attrs attrs{{"rate", op.attrs.GetDouble("rate")}, {"seed", op.attrs.GetInt("seed")}};
  return {b.Add1("dropout", {*dy[0]}, attrs, op.name + "/grad")};
}

// ---- recompute_gate ---------------------------------------------------------------------

// recompute_gate(x, after) = x, computed only once `after` exists. Activation recomputation
// (graph/autograd.h) feeds a recomputed segment through it, gated on a gradient, so that the
// actors run the recomputation in the backward pass instead of right away. `after` is only
// waited for: any layout of it goes with any layout of x, the output taking x's.
std::vector<TensorMeta> InferRecomputeGate(const OpContext& ctx) {
  CheckInputCount(ctx, 2);
  return {ctx.inputs[0]};
}

std::vector<SbpSignature> RecomputeGateSignatures(const OpContext& ctx, int64_t) {
  auto layouts = [](const Shape& shape) {
    std::vector<sbp::Sbp> all = {B()};
    for (int k = 0; k < shape.rank(); ++k) all.push_back(S(k));
    all.push_back(P());
    return all;
  };
  std::vector<SbpSignature> sigs;
  for (const sbp::Sbp& x : layouts(ctx.inputs[0].shape)) {
    for (const sbp::Sbp& after : layouts(ctx.inputs[1].shape)) sigs.push_back(Sig({x, after}, {x}));
  }
  return sigs;
}

OpCost RecomputeGateCost(const OpContext& ctx) {  // a copy of x
  OpCost cost;
  cost.bytes_read = Bytes(ctx.inputs[0]);
  cost.bytes_written = Bytes(ctx.inputs[0]);
  return cost;
}

}  // namespace

void RegisterMiscOps(graph::OpRegistry& registry) {
  OpDef input{"input", 0, 0, 1, InferInput, SourceSignatures, SourceCost, nullptr};
  input.role = graph::OpRole::kInput;
  registry.Register(std::move(input));
  OpDef variable{"variable", 0, 0, 1, InferVariable, SourceSignatures, SourceCost, nullptr};
  variable.role = graph::OpRole::kVariable;
  registry.Register(std::move(variable));
  for (const char* type : {"fill_like", "zeros_like", "ones_like"}) {
    registry.Register(OpDef{type, 1, 1, 1, InferLike, LikeSignatures, LikeCost, NoGradient});
  }
  registry.Register(OpDef{"causal_mask", 1, 1, 1, InferCausalMask, CausalMaskSignatures,
                          CausalMaskCost, NoGradient});
  OpDef assign{"assign", 2, 2, 0, InferAssign, AssignSignatures, AssignCost, nullptr};
  assign.role = graph::OpRole::kAssign;
  registry.Register(std::move(assign));
  registry.Register(
      OpDef{"dropout", 1, 1, 1, InferDropout, DropoutSignatures,
            [](const OpContext& ctx) { return ElementwiseCost(ctx, InferDropout(ctx), 2); },
            DropoutGradient});
  registry.Register(OpDef{"recompute_gate", 2, 2, 1, InferRecomputeGate, RecomputeGateSignatures,
                          RecomputeGateCost, nullptr});
  RegisterUpdateOps(registry);
}

}  // namespace twinflow::ops
