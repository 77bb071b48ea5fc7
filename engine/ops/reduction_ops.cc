// Reductions over a set of axes: reduce_sum, reduce_mean, reduce_max, and the helper ops their
// gradients use: broadcast_reduced_like (sum and mean) and reduce_max_grad.
//
// Attributes: "axes" (ints, negative counts from the end; absent means every axis) and
// "keepdims" (bool, default false). A split on a reduced axis leaves each device a partial
// result: P(sum) for sum and mean (the mean kernel divides by the logical extent), P(max) for
// max. Gradient of max: every input element equal to the maximum receives the full output
// gradient (ties are not shared out), a rule each device can apply on its own slice.
#include <optional>
#include <vector>

#include "engine/graph/graph_builder.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

struct ReduceSpec {
  std::vector<bool> reduced;  // per input axis
  bool keepdims = false;
  Shape out;
  int64_t count = 1;  // elements reduced into each output element

  // The output axis that input axis `axis` (not reduced) becomes.
  int OutAxis(int axis) const {
    if (keepdims) return axis;
    int out_axis = 0;
    for (int i = 0; i < axis; ++i) out_axis += reduced[i] ? 0 : 1;
    return out_axis;
  }
};

ReduceSpec ParseReduce(const OpContext& ctx, const Shape& in) {
  ReduceSpec spec;
  const int rank = in.rank();
  spec.keepdims = ctx.attrs.GetBool("keepdims", false);
  spec.reduced.assign(rank, !ctx.attrs.Has("axes"));
  if (ctx.attrs.Has("axes")) {
    for (int64_t axis : ctx.attrs.GetInts("axes")) {
      const int a = NormalizeAxis(ctx, axis, rank, "axes");
      if (spec.reduced[a]) ThrowInvalid(ctx, "attribute 'axes' repeats axis " + std::to_string(a));
      spec.reduced[a] = true;
    }
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (spec.reduced[i]) {
      spec.count *= in[i];
      if (spec.keepdims) dims.push_back(1);
    } else {
      dims.push_back(in[i]);
    }
  }
  spec.out = Shape(dims);
  return spec;
}

Attrs ReduceAttrs(const Attrs& attrs) {
  Attrs out;
  if (attrs.Has("axes")) out.Set("axes", attrs.GetInts("axes"));
  out.Set("keepdims", attrs.GetBool("keepdims", false));
  return out;
}

OpDef MakeReduce(const std::string& type, ReduceOp op) {
  OpDef def;
  def.type = type;
  def.kernel_class = graph::KernelClass::kRowwise;
  def.infer = [op](const OpContext& ctx) {
    CheckInputCount(ctx, 1);
    CheckFloat(ctx, 0, "input");
    const ReduceSpec spec = ParseReduce(ctx, ctx.inputs[0].shape);
    if (op == ReduceOp::kMax && spec.count == 0) {
      ThrowShape(ctx,
                 "cannot take the maximum over an empty axis of " + ctx.inputs[0].shape.ToString());
    }
    return std::vector<TensorMeta>{{spec.out, ctx.inputs[0].dtype}};
  };
  def.signatures = [op](const OpContext& ctx, int64_t) {
    const ReduceSpec spec = ParseReduce(ctx, ctx.inputs[0].shape);
    const Sbp partial = Sbp::Partial(op);
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k)}, {spec.reduced[k] ? partial : S(spec.OutAxis(k))}));
    }
    sigs.push_back(Sig({partial}, {partial}));
    sigs.push_back(Sig({B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    const ReduceSpec spec = ParseReduce(ctx, ctx.inputs[0].shape);
    return InputScaledCost(ctx, {{spec.out, ctx.inputs[0].dtype}}, 1.0);
  };
  return def;
}

std::vector<std::optional<TensorId>> SumOrMeanGradient(
    GraphBuilder& builder, const OpNode& op, const std::vector<std::optional<TensorId>>& dy,
    bool mean) {
  if (!dy[0]) return {std::nullopt};
  Attrs attrs = ReduceAttrs(op.attrs);
  if (mean) {
    const std::vector<TensorMeta> inputs{builder.meta(op.inputs[0])};
    const OpContext ctx{op.type, op.attrs, inputs};
    const int64_t count = ParseReduce(ctx, inputs[0].shape).count;
    attrs.Set("scale", count > 0 ? 1.0 / static_cast<double>(count) : 0.0);
  }
  return {builder.Add1("broadcast_reduced_like", {*dy[0], op.inputs[0]}, attrs)};
}

// broadcast_reduced_like(dy, like): dy (shaped like the reduction of `like`) copied along the
// reduced axes, times attr "scale" (default 1). Only like's shape is used.
OpDef MakeBroadcastReducedLike() {
  OpDef def;
  def.type = "broadcast_reduced_like";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "dy");
    const ReduceSpec spec = ParseReduce(ctx, ctx.inputs[1].shape);
    CheckShapeEq(ctx, 0, spec.out, "dy (the reduced shape of 'like')");
    ctx.attrs.GetDouble("scale", 1.0);  // type check
    return std::vector<TensorMeta>{{ctx.inputs[1].shape, ctx.inputs[0].dtype}};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const ReduceSpec spec = ParseReduce(ctx, ctx.inputs[1].shape);
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[1].shape.rank(); ++k) {
      sigs.push_back(spec.reduced[k] ? Sig({B(), S(k)}, {S(k)})
                                     : Sig({S(spec.OutAxis(k)), S(k)}, {S(k)}));
    }
    sigs.push_back(Sig({P(), B()}, {P()}));
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    graph::OpCost cost;
    const TensorMeta out{ctx.inputs[1].shape, ctx.inputs[0].dtype};
    cost.flops = static_cast<double>(out.shape.numel());
    cost.bytes_read = Bytes(ctx.inputs[0]);
    cost.bytes_written = Bytes(out);
    return cost;
  };
  return def;
}

// reduce_max_grad(x, y, dy): dx = dy where x equals its maximum y, else 0.
OpDef MakeReduceMaxGrad() {
  OpDef def;
  def.type = "reduce_max_grad";
  def.kernel_class = graph::KernelClass::kRowwise;
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 3);
    CheckFloat(ctx, 0, "x");
    CheckSameDType(ctx, 0, 1);
    CheckSameDType(ctx, 0, 2);
    const ReduceSpec spec = ParseReduce(ctx, ctx.inputs[0].shape);
    CheckShapeEq(ctx, 1, spec.out, "y");
    CheckShapeEq(ctx, 2, spec.out, "dy");
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const ReduceSpec spec = ParseReduce(ctx, ctx.inputs[0].shape);
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) {
      const int o = spec.OutAxis(k);
      sigs.push_back(spec.reduced[k] ? Sig({S(k), B(), B()}, {S(k)})
                                     : Sig({S(k), S(o), S(o)}, {S(k)}));
    }
    sigs.push_back(Sig({B(), B(), P()}, {P()}));
    sigs.push_back(Sig({B(), B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 2.0); };
  return def;
}

}  // namespace

void RegisterReductionOps(graph::OpRegistry& registry) {
  OpDef sum = MakeReduce("reduce_sum", ReduceOp::kSum);
  sum.gradient = [](GraphBuilder& b, const OpNode& op, const auto& dy) {
    return SumOrMeanGradient(b, op, dy, /*mean=*/false);
  };
  registry.Register(std::move(sum));

  OpDef mean = MakeReduce("reduce_mean", ReduceOp::kSum);
  mean.gradient = [](GraphBuilder& b, const OpNode& op, const auto& dy) {
    return SumOrMeanGradient(b, op, dy, /*mean=*/true);
  };
  registry.Register(std::move(mean));

  OpDef max = MakeReduce("reduce_max", ReduceOp::kMax);
  max.gradient =
      [](GraphBuilder& b, const OpNode& op,
         const std::vector<std::optional<TensorId>>& dy) -> std::vector<std::optional<TensorId>> {
    if (!dy[0]) return {std::nullopt};
    return {
        b.Add1("reduce_max_grad", {op.inputs[0], op.outputs[0], *dy[0]}, ReduceAttrs(op.attrs))};
  };
  registry.Register(std::move(max));

  registry.Register(MakeBroadcastReducedLike());
  registry.Register(MakeReduceMaxGrad());
}

}  // namespace twinflow::ops
