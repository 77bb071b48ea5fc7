// softmax, log_softmax (attr "axis", default -1) and sparse_softmax_cross_entropy, with their
// gradient helpers softmax_grad, log_softmax_grad and sparse_softmax_cross_entropy_grad. The
// class-split form of the cross entropy lives in sparse_xent_class_split_ops.cc.
#include "engine/ops/softmax_ops.h"

#include <optional>
#include <vector>

#include "engine/core/error.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

int SoftmaxAxis(const OpContext& ctx) {
  return NormalizeAxis(ctx, ctx.attrs.GetInt("axis", -1), ctx.inputs[0].shape.rank(), "axis");
}

// softmax's fused form (Megatron's masked-softmax fusion): attr "scale" multiplies the input
// and attr "causal" masks each [..., S, S] matrix's keys after its query, in the one kernel.
// Checked for softmax only; log_softmax has neither.
void CheckFusedSoftmax(const OpContext& ctx, bool fusable) {
  const bool causal = ctx.attrs.GetBool("causal", false);
  if (!fusable && (causal || ctx.attrs.Has("scale"))) {
    ThrowInvalid(ctx, "attributes 'scale' and 'causal' belong to softmax only");
  }
  if (!causal) return;
  const Shape& s = ctx.inputs[0].shape;
  if (SoftmaxAxis(ctx) != s.rank() - 1 || s.rank() < 2 || s[s.rank() - 1] != s[s.rank() - 2]) {
    ThrowShape(
        ctx, "causal softmax needs axis -1 of an input ending in [..., S, S], got " + s.ToString());
  }
}

// softmax / log_softmax(x) -> y.
OpDef MakeSoftmax(const std::string& type, const std::string& grad_type) {
  OpDef def;
  def.type = type;
  def.kernel_class = graph::KernelClass::kRowwise;
  const bool fusable = type == "softmax";
  def.infer = [fusable](const OpContext& ctx) {
    CheckInputCount(ctx, 1);
    CheckFloat(ctx, 0, "input");
    CheckMinRank(ctx, 0, 1, "input");
    SoftmaxAxis(ctx);
    CheckFusedSoftmax(ctx, fusable);
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int axis = SoftmaxAxis(ctx);
    // A causal mask depends on a row's place in its matrix: the query axis stays whole too.
    const int query = ctx.attrs.GetBool("causal", false) ? axis - 1 : axis;
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) {
      if (k != axis && k != query) sigs.push_back(Sig({S(k)}, {S(k)}));
    }
    sigs.push_back(Sig({B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 5.0); };
  def.gradient = [grad_type](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt};
    Attrs attrs;
    attrs.Set("axis", op.attrs.GetInt("axis", -1));
    // Masked entries have y = 0 and so no gradient; the scale's is folded into the kernel.
    if (op.attrs.Has("scale")) attrs.Set("scale", op.attrs.GetDouble("scale"));
    return {b.Add1(grad_type, {op.outputs[0], *dy[0]}, attrs)};
  };
  return def;
}

// softmax_grad(y, dy) = scale * y * (dy - sum(dy * y)) (attr "scale", default 1: the fused
// softmax's); log_softmax_grad(y, dy) = dy - exp(y) * sum(dy). Both are linear in dy, hence
// B, P -> P.
OpDef MakeSoftmaxGrad(const std::string& type) {
  OpDef def;
  def.type = type;
  def.kernel_class = graph::KernelClass::kRowwise;
  def.min_inputs = def.max_inputs = 2;
  const bool scalable = type == "softmax_grad";
  def.infer = [scalable](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "y");
    CheckMinRank(ctx, 0, 1, "y");
    CheckSameDType(ctx, 0, 1);
    CheckShapeEq(ctx, 1, ctx.inputs[0].shape, "dy");
    SoftmaxAxis(ctx);
    if (!scalable && ctx.attrs.Has("scale"))
      ThrowInvalid(ctx, "attribute 'scale' is softmax_grad's");
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int axis = SoftmaxAxis(ctx);
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) {
      if (k != axis) sigs.push_back(Sig({S(k), S(k)}, {S(k)}));
    }
    sigs.push_back(Sig({B(), P()}, {P()}));
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 4.0); };
  return def;
}

// Shared checks of sparse_softmax_cross_entropy and its gradient: logits [..., C] floating,
// labels [...] integer.
void CheckLogitsLabels(const OpContext& ctx) {
  CheckFloat(ctx, 0, "logits");
  CheckMinRank(ctx, 0, 1, "logits");
  CheckIndex(ctx, 1, "labels");
  CheckShapeEq(ctx, 1, DropLast(ctx.inputs[0].shape), "labels");
}

OpDef MakeSparseXent() {
  OpDef def;
  def.type = "sparse_softmax_cross_entropy";
  def.kernel_class = graph::KernelClass::kRowwise;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckLogitsLabels(ctx);
    return std::vector<TensorMeta>{{ctx.inputs[1].shape, ctx.inputs[0].dtype}};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k + 1 < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k), S(k)}, {S(k)}));
    }
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    return InputScaledCost(ctx, {{ctx.inputs[1].shape, ctx.inputs[0].dtype}}, 4.0);
  };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    return {b.Add1("sparse_softmax_cross_entropy_grad", {op.inputs[0], op.inputs[1], *dy[0]}),
            std::nullopt};
  };
  return def;
}

// sparse_softmax_cross_entropy_grad(logits, labels, dloss) = (softmax(logits) - one_hot) * dloss.
OpDef MakeSparseXentGrad() {
  OpDef def;
  def.type = "sparse_softmax_cross_entropy_grad";
  def.kernel_class = graph::KernelClass::kRowwise;
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 3);
    CheckLogitsLabels(ctx);
    CheckSameDType(ctx, 0, 2);
    CheckShapeEq(ctx, 2, ctx.inputs[1].shape, "dloss");
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k + 1 < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k), S(k), S(k)}, {S(k)}));
    }
    sigs.push_back(Sig({B(), B(), P()}, {P()}));
    sigs.push_back(Sig({B(), B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 5.0); };
  return def;
}

}  // namespace

graph::TensorId SparseSoftmaxCrossEntropy(GraphBuilder& builder, TensorId logits, TensorId labels,
                                          bool class_split) {
  // The loss computes in f32 whatever the logits' type, as mixed-precision training does.
  if (IsStorageOnly(builder.meta(logits).dtype)) {
    logits = builder.CastKeepingPin(logits, DType::kF32);
  }
  if (!class_split) return builder.Add1("sparse_softmax_cross_entropy", {logits, labels});
  const int rank = builder.meta(logits).shape.rank();
  if (rank < 1) {
    throw ShapeError("sparse_softmax_cross_entropy: logits must have rank >= 1, got " +
                     builder.meta(logits).shape.ToString());
  }
  Attrs over_classes;
  over_classes.Set("axes", std::vector<int64_t>{rank - 1});
  over_classes.Set("keepdims", false);
  const TensorId m = builder.Add1("reduce_max", {logits}, over_classes);
  const TensorId e = builder.Add1("sparse_xent_class_split_exp", {logits, m});
  // Pinned logits (a strategy's column-parallel head) keep their exponentials split too, so
  // the class sums are all-reduced rather than the exponentials gathered.
  if (const auto& pin = builder.graph().tensor(logits).pin) builder.Pin(e, *pin);
  const TensorId s = builder.Add1("reduce_sum", {e}, over_classes);
  const TensorId picked = builder.Add1("pick_label_logit", {logits, labels});
  return builder.Add1("sparse_xent_class_split_loss", {s, m, picked});
}

void RegisterSoftmaxOps(graph::OpRegistry& registry) {
  registry.Register(MakeSoftmax("softmax", "softmax_grad"));
  registry.Register(MakeSoftmax("log_softmax", "log_softmax_grad"));
  registry.Register(MakeSoftmaxGrad("softmax_grad"));
  registry.Register(MakeSoftmaxGrad("log_softmax_grad"));
  registry.Register(MakeSparseXent());
  registry.Register(MakeSparseXentGrad());
  RegisterSparseXentClassSplitOps(registry);
}

}  // namespace twinflow::ops
