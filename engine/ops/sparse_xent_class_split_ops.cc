// The ops that SparseSoftmaxCrossEntropy(class_split=true) is built from (see softmax_ops.h),
// with their gradient helpers:
//   pick_label_logit(logits, labels)            logits[..., label]; on a class split each
//                                               device gives the logit when the label is in
//                                               its class range, else 0 (P(sum))
//   pick_label_logit_grad(dy, labels)           one_hot(labels, num_classes) * dy
//   sparse_xent_class_split_exp(logits, m)      exp(logits - m[..., None])
//   sparse_xent_class_split_exp_grad(e, dy)     (dy * e, -sum(dy * e, -1))
//   sparse_xent_class_split_loss(s, m, picked)  log(s) + m - picked
//   sparse_xent_class_split_loss_grad(s, dy)    (dy / s, dy, -dy)
#include <optional>
#include <vector>

#include "engine/ops/op_helpers.h"
#include "engine/ops/softmax_ops.h"

namespace twinflow::ops {
namespace {

OpDef MakePickLabelLogit() {
  OpDef def;
  def.type = "pick_label_logit";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "logits");
    CheckMinRank(ctx, 0, 1, "logits");
    CheckIndex(ctx, 1, "labels");
    CheckShapeEq(ctx, 1, DropLast(ctx.inputs[0].shape), "labels");
    return std::vector<TensorMeta>{{ctx.inputs[1].shape, ctx.inputs[0].dtype}};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int last = ctx.inputs[0].shape.rank() - 1;
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < last; ++k) sigs.push_back(Sig({S(k), S(k)}, {S(k)}));
    sigs.push_back(Sig({S(last), B()}, {P()}));
    sigs.push_back(Sig({P(), B()}, {P()}));
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    const TensorMeta out{ctx.inputs[1].shape, ctx.inputs[0].dtype};
    graph::OpCost cost;
    cost.flops = static_cast<double>(out.shape.numel());
    cost.bytes_read = Bytes(ctx.inputs[1]) + Bytes(out);  // one logit per row
    cost.bytes_written = Bytes(out);
    return cost;
  };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    const Shape& logits = b.meta(op.inputs[0]).shape;
    Attrs attrs;
    attrs.Set("num_classes", logits[logits.rank() - 1]);
    return {b.Add1("pick_label_logit_grad", {*dy[0], op.inputs[1]}, attrs), std::nullopt};
  };
  return def;
}

OpDef MakePickLabelLogitGrad() {
  OpDef def;
  def.type = "pick_label_logit_grad";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "dy");
    CheckIndex(ctx, 1, "labels");
    CheckShapeEq(ctx, 1, ctx.inputs[0].shape, "labels");
    const int64_t classes = ctx.attrs.GetInt("num_classes");
    if (classes < 0) ThrowInvalid(ctx, "attribute 'num_classes' must be >= 0");
    return std::vector<TensorMeta>{{WithLast(ctx.inputs[0].shape, classes), ctx.inputs[0].dtype}};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int rank = ctx.inputs[0].shape.rank();
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < rank; ++k) sigs.push_back(Sig({S(k), S(k)}, {S(k)}));
    sigs.push_back(Sig({B(), B()}, {S(rank)}));  // each device writes its class range
    sigs.push_back(Sig({P(), B()}, {P()}));
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    graph::OpCost cost;
    cost.flops = static_cast<double>(ctx.inputs[0].shape.numel());
    cost.bytes_read = InputBytes(ctx);
    cost.bytes_written = ctx.inputs[0].shape.numel() * ctx.attrs.GetInt("num_classes") *
                         DTypeSize(ctx.inputs[0].dtype);
    return cost;
  };
  return def;
}

OpDef MakeClassSplitExp() {
  OpDef def;
  def.type = "sparse_xent_class_split_exp";
  def.kernel_class = graph::KernelClass::kActivation;
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "logits");
    CheckMinRank(ctx, 0, 1, "logits");
    CheckSameDType(ctx, 0, 1);
    CheckShapeEq(ctx, 1, DropLast(ctx.inputs[0].shape), "max");
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int last = ctx.inputs[0].shape.rank() - 1;
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < last; ++k) sigs.push_back(Sig({S(k), S(k)}, {S(k)}));
    sigs.push_back(Sig({S(last), B()}, {S(last)}));
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 2.0); };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    const std::vector<TensorId> g =
        b.Add("sparse_xent_class_split_exp_grad", {op.outputs[0], *dy[0]});
    return {g[0], g[1]};
  };
  return def;
}

OpDef MakeClassSplitExpGrad() {
  OpDef def;
  def.type = "sparse_xent_class_split_exp_grad";
  def.kernel_class = graph::KernelClass::kActivation;
  def.min_inputs = def.max_inputs = 2;
  def.num_outputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "e");
    CheckMinRank(ctx, 0, 1, "e");
    CheckSameDType(ctx, 0, 1);
    CheckShapeEq(ctx, 1, ctx.inputs[0].shape, "dy");
    return std::vector<TensorMeta>{ctx.inputs[0],
                                   {DropLast(ctx.inputs[0].shape), ctx.inputs[0].dtype}};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int last = ctx.inputs[0].shape.rank() - 1;
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < last; ++k) sigs.push_back(Sig({S(k), S(k)}, {S(k), S(k)}));
    sigs.push_back(Sig({S(last), S(last)}, {S(last), P()}));
    sigs.push_back(Sig({B(), P()}, {P(), P()}));
    sigs.push_back(Sig({B(), B()}, {B(), B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    return InputScaledCost(
        ctx, {ctx.inputs[0], {DropLast(ctx.inputs[0].shape), ctx.inputs[0].dtype}}, 2.0);
  };
  return def;
}

void CheckSameShapes(const OpContext& ctx, int count) {
  CheckInputCount(ctx, count);
  CheckFloat(ctx, 0, "input 0");
  for (int i = 1; i < count; ++i) {
    CheckSameDType(ctx, 0, i);
    CheckShapeEq(ctx, i, ctx.inputs[0].shape, "every input");
  }
}

OpDef MakeClassSplitLoss() {
  OpDef def;
  def.type = "sparse_xent_class_split_loss";
  def.min_inputs = def.max_inputs = 3;
  def.infer = [](const OpContext& ctx) {
    CheckSameShapes(ctx, 3);
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k), S(k), S(k)}, {S(k)}));
    }
    sigs.push_back(Sig({B(), B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 3.0); };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt, std::nullopt};
    const std::vector<TensorId> g =
        b.Add("sparse_xent_class_split_loss_grad", {op.inputs[0], *dy[0]});
    return {g[0], g[1], g[2]};
  };
  return def;
}

OpDef MakeClassSplitLossGrad() {
  OpDef def;
  def.type = "sparse_xent_class_split_loss_grad";
  def.min_inputs = def.max_inputs = 2;
  def.num_outputs = 3;
  def.infer = [](const OpContext& ctx) {
    CheckSameShapes(ctx, 2);
    return std::vector<TensorMeta>(3, ctx.inputs[0]);
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ctx.inputs[0].shape.rank(); ++k) {
      sigs.push_back(Sig({S(k), S(k)}, {S(k), S(k), S(k)}));
    }
    sigs.push_back(Sig({B(), P()}, {P(), P(), P()}));
    sigs.push_back(Sig({B(), B()}, {B(), B(), B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    return InputScaledCost(ctx, std::vector<TensorMeta>(3, ctx.inputs[0]), 2.0);
  };
  return def;
}

}  // namespace

void RegisterSparseXentClassSplitOps(graph::OpRegistry& registry) {
  registry.Register(MakePickLabelLogit());
  registry.Register(MakePickLabelLogitGrad());
  registry.Register(MakeClassSplitExp());
  registry.Register(MakeClassSplitExpGrad());
  registry.Register(MakeClassSplitLoss());
  registry.Register(MakeClassSplitLossGrad());
}

}  // namespace twinflow::ops
