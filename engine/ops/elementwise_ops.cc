// The elementwise family: broadcasting add/sub/mul/div, bias_add, and the helpers their
// gradients need (bias_add_grad, reduce_sum_like, broadcast_like); scalar ops, identity and
// cast are in scalar_ops.cc.
//
// Partial rules beyond P(sum): adding a value that every device holds, or a monotone map such
// as a cast or a positive scale, commutes with max and min, so P(max)/P(min) pass through.
#include <cmath>

#include "engine/core/error.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

constexpr ReduceOp kMax = ReduceOp::kMax;
constexpr ReduceOp kMin = ReduceOp::kMin;

OpDef Def(const std::string& type, int inputs) {
  OpDef def;
  def.type = type;
  def.min_inputs = inputs;
  def.max_inputs = inputs;
  return def;
}

// ---- broadcasting binary ops ----

std::vector<TensorMeta> InferBinary(const OpContext& ctx, bool float_only) {
  CheckInputCount(ctx, 2);
  CheckSameDType(ctx);
  if (float_only) CheckFloat(ctx, 0);
  return {{InferBroadcast(ctx, ctx.inputs[0].shape, ctx.inputs[1].shape), ctx.inputs[0].dtype}};
}

std::vector<SbpSignature> BinarySignatures(const OpContext& ctx, const std::string& type) {
  const Shape out = InferBinary(ctx, false)[0].shape;
  std::vector<SbpSignature> sigs =
      BroadcastSplitSignatures({ctx.inputs[0].shape, ctx.inputs[1].shape}, out);
  if (type == "add" || type == "sub") {
    AddSignature(sigs, {{P(), P()}, {P()}});
    for (ReduceOp op : {kMax, kMin}) {
      const ReduceOp flipped = op == kMax ? kMin : kMax;
      AddSignature(sigs, {{P(op), B()}, {P(op)}});
      AddSignature(sigs, {{B(), P(op)}, {P(type == "add" ? op : flipped)}});
    }
  } else if (type == "mul") {
    AddSignature(sigs, {{P(), B()}, {P()}});
    AddSignature(sigs, {{B(), P()}, {P()}});
  } else {  // div: linear in the numerator only
    AddSignature(sigs, {{P(), B()}, {P()}});
  }
  return sigs;
}

Grads BinaryGradient(GraphBuilder& b, const OpNode& op, const Grads& dy) {
  if (!dy[0]) return {std::nullopt, std::nullopt};
  // Copies: adding ops may move `op`.
  const TensorId x = op.inputs[0], y = op.inputs[1], z = op.outputs[0], g = *dy[0];
  const std::string type = op.type;
  if (type == "add") return {SumToLike(b, g, x), SumToLike(b, g, y)};
  if (type == "sub") {
    return {SumToLike(b, g, x), SumToLike(b, b.Add1("scalar_mul", {g}, {{"value", -1.0}}), y)};
  }
  if (type == "mul") {
    return {SumToLike(b, b.Add1("mul", {g, y}), x), SumToLike(b, b.Add1("mul", {g, x}), y)};
  }
  // div: z = x / y, dz/dy = -z / y.
  const TensorId gz_over_y = b.Add1("div", {b.Add1("mul", {g, z}), y});
  return {SumToLike(b, b.Add1("div", {g, y}), x),
          SumToLike(b, b.Add1("scalar_mul", {gz_over_y}, {{"value", -1.0}}), y)};
}

OpDef BinaryDef(const std::string& type) {
  OpDef def = Def(type, 2);
  const bool float_only = type == "div";
  def.infer = [float_only](const OpContext& ctx) { return InferBinary(ctx, float_only); };
  def.signatures = [type](const OpContext& ctx, int64_t) { return BinarySignatures(ctx, type); };
  def.cost = [float_only](const OpContext& ctx) {
    return ElementwiseCost(ctx, InferBinary(ctx, float_only), 1);
  };
  def.gradient = BinaryGradient;
  return def;
}

// ---- bias_add and its gradient ----

int BiasAxis(const OpContext& ctx, int rank) {
  if (rank < 1) ThrowShape(ctx, "input must have rank >= 1, got " + ctx.inputs[0].ToString());
  return NormalizeAxis(ctx, ctx.attrs.GetInt("axis", -1), rank);
}

std::vector<TensorMeta> InferBiasAdd(const OpContext& ctx) {
  CheckInputCount(ctx, 2);
  CheckSameDType(ctx);
  const int axis = BiasAxis(ctx, ctx.inputs[0].shape.rank());
  CheckRank(ctx, 1, 1);
  if (ctx.inputs[1].shape[0] != ctx.inputs[0].shape[axis]) {
    ThrowShape(ctx, "bias " + ctx.inputs[1].ToString() + " does not match axis " +
                        std::to_string(axis) + " of " + ctx.inputs[0].ToString());
  }
  return {ctx.inputs[0]};
}

std::vector<SbpSignature> BiasAddSignatures(const OpContext& ctx) {
  InferBiasAdd(ctx);
  const int axis = BiasAxis(ctx, ctx.inputs[0].shape.rank());
  std::vector<SbpSignature> sigs;
  for (int d = 0; d < ctx.inputs[0].shape.rank(); ++d) {
    AddSignature(sigs, {{S(d), d == axis ? S(0) : B()}, {S(d)}});
  }
  AddSignature(sigs, {{P(), P()}, {P()}});
  for (ReduceOp op : {kMax, kMin}) {
    AddSignature(sigs, {{P(op), B()}, {P(op)}});
    AddSignature(sigs, {{B(), P(op)}, {P(op)}});
  }
  AddSignature(sigs, {{B(), B()}, {B()}});
  return sigs;
}

std::vector<TensorMeta> InferBiasAddGrad(const OpContext& ctx) {
  CheckInputCount(ctx, 1);
  const int axis = BiasAxis(ctx, ctx.inputs[0].shape.rank());
  return {{Shape{ctx.inputs[0].shape[axis]}, ctx.inputs[0].dtype}};
}

std::vector<SbpSignature> BiasAddGradSignatures(const OpContext& ctx) {
  InferBiasAddGrad(ctx);
  const int axis = BiasAxis(ctx, ctx.inputs[0].shape.rank());
  std::vector<SbpSignature> sigs;
  for (int d = 0; d < ctx.inputs[0].shape.rank(); ++d) {
    AddSignature(sigs, {{S(d)}, {d == axis ? S(0) : P()}});
  }
  AddSignature(sigs, {{P()}, {P()}});
  AddSignature(sigs, {{B()}, {B()}});
  return sigs;
}

void RegisterBiasOps(graph::OpRegistry& registry) {
  OpDef bias = Def("bias_add", 2);
  bias.infer = InferBiasAdd;
  bias.signatures = [](const OpContext& ctx, int64_t) { return BiasAddSignatures(ctx); };
  bias.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, InferBiasAdd(ctx), 1); };
  bias.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    Attrs attrs{{"axis", op.attrs.GetInt("axis", -1)}};
    return {*dy[0], b.Add1("bias_add_grad", {*dy[0]}, attrs)};
  };
  registry.Register(std::move(bias));

  OpDef grad = Def("bias_add_grad", 1);
  grad.infer = InferBiasAddGrad;
  grad.signatures = [](const OpContext& ctx, int64_t) { return BiasAddGradSignatures(ctx); };
  grad.cost = [](const OpContext& ctx) {
    graph::OpCost cost = ElementwiseCost(ctx, InferBiasAddGrad(ctx), 0);
    cost.flops = static_cast<double>(ctx.inputs[0].shape.numel());
    return cost;
  };
  // Its adjoint spreads g along `axis`: bias_add onto zeros shaped like the input.
  grad.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt};
    const Attrs attrs{{"axis", op.attrs.GetInt("axis", -1)}};  // read before `op` may move
    const TensorId zeros = b.Add1("scalar_mul", {op.inputs[0]}, {{"value", 0.0}});
    return {b.Add1("bias_add", {zeros, *dy[0]}, attrs)};
  };
  registry.Register(std::move(grad));
}

// ---- reduce_sum_like / broadcast_like: move gradients between broadcast shapes ----

std::vector<TensorMeta> InferLike(const OpContext& ctx, bool reduce) {
  CheckInputCount(ctx, 2);
  const Shape& x = ctx.inputs[0].shape;
  const Shape& like = ctx.inputs[1].shape;
  if (reduce ? !BroadcastsTo(like, x) : !BroadcastsTo(x, like)) {
    ThrowShape(ctx, (reduce ? "reference " + like.ToString() + " does not broadcast to input "
                            : "input " + x.ToString() + " does not broadcast to reference ") +
                        (reduce ? x.ToString() : like.ToString()));
  }
  return {{like, ctx.inputs[0].dtype}};
}

// Splits on kept axes stay splits; a split of a summed axis yields partial sums.
std::vector<SbpSignature> ReduceSumLikeSignatures(const OpContext& ctx) {
  InferLike(ctx, true);
  const Shape& x = ctx.inputs[0].shape;
  const Shape& like = ctx.inputs[1].shape;
  std::vector<SbpSignature> sigs;
  for (int d = 0; d < x.rank(); ++d) {
    const int ld = d - (x.rank() - like.rank());
    if (ld >= 0 && like[ld] == x[d]) {
      AddSignature(sigs, {{S(d), S(ld)}, {S(ld)}});
    } else {
      AddSignature(sigs, {{S(d), B()}, {P()}});
    }
  }
  AddSignature(sigs, {{P(), B()}, {P()}});
  AddSignature(sigs, {{B(), B()}, {B()}});
  // The reference is never read, so a partial one serves as well as a whole one.
  AddSignature(sigs, {{P(), P()}, {P()}});
  AddSignature(sigs, {{B(), P()}, {B()}});
  return sigs;
}

void RegisterLikeOps(graph::OpRegistry& registry) {
  OpDef reduce = Def("reduce_sum_like", 2);
  reduce.infer = [](const OpContext& ctx) { return InferLike(ctx, true); };
  reduce.signatures = [](const OpContext& ctx, int64_t) { return ReduceSumLikeSignatures(ctx); };
  reduce.cost = [](const OpContext& ctx) {
    graph::OpCost cost = ElementwiseCost(ctx, InferLike(ctx, true), 0);
    cost.bytes_read = Bytes(ctx.inputs[0]);  // the reference's values are never read
    cost.flops = static_cast<double>(ctx.inputs[0].shape.numel());
    return cost;
  };
  reduce.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    return {b.Add1("broadcast_like", {*dy[0], op.inputs[0]}), std::nullopt};
  };
  registry.Register(std::move(reduce));

  OpDef broadcast = Def("broadcast_like", 2);
  broadcast.infer = [](const OpContext& ctx) { return InferLike(ctx, false); };
  broadcast.signatures = [](const OpContext& ctx, int64_t) {
    const Shape out = InferLike(ctx, false)[0].shape;
    std::vector<SbpSignature> sigs =
        BroadcastSplitSignatures({ctx.inputs[0].shape, ctx.inputs[1].shape}, out);
    for (ReduceOp op : {ReduceOp::kSum, kMax, kMin}) AddSignature(sigs, {{P(op), B()}, {P(op)}});
    AddSignature(sigs, {{P(), P()}, {P()}});  // the reference is never read
    AddSignature(sigs, {{B(), P()}, {B()}});
    return sigs;
  };
  broadcast.cost = [](const OpContext& ctx) {
    graph::OpCost cost = ElementwiseCost(ctx, InferLike(ctx, false), 0);
    cost.bytes_read = Bytes(ctx.inputs[0]);
    return cost;
  };
  broadcast.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    return {b.Add1("reduce_sum_like", {*dy[0], op.inputs[0]}), std::nullopt};
  };
  registry.Register(std::move(broadcast));
}

}  // namespace

// Scalar ops, identity and cast live in scalar_ops.cc to keep files short.
void RegisterScalarOps(graph::OpRegistry& registry);

void RegisterElementwiseOps(graph::OpRegistry& registry) {
  for (const char* type : {"add", "sub", "mul", "div"}) registry.Register(BinaryDef(type));
  RegisterBiasOps(registry);
  RegisterLikeOps(registry);
  RegisterScalarOps(registry);
}

}  // namespace twinflow::ops
