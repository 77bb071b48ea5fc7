// embedding(weight[V, H], ids[...] i32/i64) -> out[..., H], and its gradient helper
// embedding_grad(dy[..., H], ids; num_embeddings = V) -> dweight[V, H] (a scatter-add of dy
// rows in id order); rotary(x[batch, seq, width]; head_dim, theta = 1e4, inverse = false), the
// rotary position embedding (Su et al. 2021) of every head of width head_dim.
//
// Vocabulary split: with weight S(0) each device looks up the ids inside its row range and
// writes zeros for the others, so the output is a partial sum. Its mirror in the gradient is
// embedding_grad B, B -> S(0): each device scatters only the ids of its own row range.
#include <optional>
#include <vector>

#include "engine/graph/graph_builder.h"
#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

OpDef MakeEmbedding() {
  OpDef def;
  def.type = "embedding";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "weight");
    CheckIndex(ctx, 1, "ids");
    if (ctx.inputs[0].shape.rank() != 2) {
      ThrowShape(ctx, "weight must be [vocabulary, hidden], got " + ctx.inputs[0].shape.ToString());
    }
    return std::vector<TensorMeta>{
        {WithLast(ctx.inputs[1].shape, ctx.inputs[0].shape[1]), ctx.inputs[0].dtype}};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int ids_rank = ctx.inputs[1].shape.rank();
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ids_rank; ++k) sigs.push_back(Sig({B(), S(k)}, {S(k)}));
    sigs.push_back(Sig({S(1), B()}, {S(ids_rank)}));  // hidden split
    sigs.push_back(Sig({S(0), B()}, {P()}));          // vocabulary split
    sigs.push_back(Sig({P(), B()}, {P()}));
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  // A vocabulary-split table is Megatron's vocabulary-parallel embedding.
  def.parallelism = [](const OpContext&, const SbpSignature& sig) -> std::string {
    if (sig.inputs[0].is_split()) return sig.inputs[0].axis == 0 ? "vocabulary" : "hidden";
    if (sig.inputs[1].is_split()) return "rows";
    return sig.outputs[0].is_partial() ? "partial" : "replicated";
  };
  def.cost = [](const OpContext& ctx) {
    const TensorMeta out{WithLast(ctx.inputs[1].shape, ctx.inputs[0].shape[1]),
                         ctx.inputs[0].dtype};
    graph::OpCost cost;
    cost.bytes_read = Bytes(ctx.inputs[1]) + Bytes(out);  // only the looked-up rows
    cost.bytes_written = Bytes(out);
    return cost;
  };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt, std::nullopt};
    Attrs attrs;
    attrs.Set("num_embeddings", b.meta(op.inputs[0]).shape[0]);
    return {b.Add1("embedding_grad", {*dy[0], op.inputs[1]}, attrs), std::nullopt};
  };
  return def;
}

OpDef MakeEmbeddingGrad() {
  OpDef def;
  def.type = "embedding_grad";
  def.min_inputs = def.max_inputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 2);
    CheckFloat(ctx, 0, "dy");
    CheckIndex(ctx, 1, "ids");
    CheckMinRank(ctx, 0, 1, "dy");
    CheckShapeEq(ctx, 1, DropLast(ctx.inputs[0].shape), "ids");
    const int64_t vocabulary = ctx.attrs.GetInt("num_embeddings");
    if (vocabulary < 0) ThrowInvalid(ctx, "attribute 'num_embeddings' must be >= 0");
    const Shape& dy = ctx.inputs[0].shape;
    return std::vector<TensorMeta>{{Shape{vocabulary, dy[dy.rank() - 1]}, ctx.inputs[0].dtype}};
  };
  def.signatures = [](const OpContext& ctx, int64_t) {
    const int ids_rank = ctx.inputs[1].shape.rank();
    std::vector<SbpSignature> sigs;
    for (int k = 0; k < ids_rank; ++k) sigs.push_back(Sig({S(k), S(k)}, {P()}));
    sigs.push_back(Sig({S(ids_rank), B()}, {S(1)}));  // hidden split
    sigs.push_back(Sig({B(), B()}, {S(0)}));          // vocabulary split
    sigs.push_back(Sig({P(), B()}, {P()}));
    sigs.push_back(Sig({B(), B()}, {B()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    const Shape& dy = ctx.inputs[0].shape;
    graph::OpCost cost;
    cost.flops = static_cast<double>(dy.numel());
    cost.bytes_read = InputBytes(ctx);
    cost.bytes_written =
        ctx.attrs.GetInt("num_embeddings") * dy[dy.rank() - 1] * DTypeSize(ctx.inputs[0].dtype);
    return cost;
  };
  return def;
}

// rotary: the token at position p (its index on axis 1) has each head's pair (i, i + d/2)
// rotated by the angle p * theta^(-2i/d), the "rotate half" pairing of Megatron-LM and Hugging
// Face Llama. inverse rotates back (the transpose), which is the gradient. Positions and heads
// come from where a shard sits in the logical tensor, so x may be split on batch, sequence or
// whole heads; the rotation is linear, so a partial x gives a partial result.
int64_t RotaryHeadDim(const OpContext& ctx) {
  const int64_t head_dim = ctx.attrs.GetInt("head_dim", 0);
  const int64_t width = ctx.inputs[0].shape[2];
  if (head_dim <= 0 || head_dim % 2 != 0 || width % head_dim != 0) {
    ThrowInvalid(ctx, "attr head_dim = " + std::to_string(head_dim) +
                          " must be positive, even and divide the width " + std::to_string(width));
  }
  if (!(ctx.attrs.GetDouble("theta", 1e4) > 0)) ThrowInvalid(ctx, "attr theta must be positive");
  return head_dim;
}

OpDef MakeRotary() {
  OpDef def;
  def.type = "rotary";
  def.min_inputs = def.max_inputs = 1;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 1);
    CheckFloat(ctx, 0, "x");
    CheckRank(ctx, 0, 3, "x");
    RotaryHeadDim(ctx);
    return std::vector<TensorMeta>{ctx.inputs[0]};
  };
  def.signatures = [](const OpContext& ctx, int64_t parts) {
    std::vector<SbpSignature> sigs{Sig({S(0)}, {S(0)}), Sig({S(1)}, {S(1)})};
    // Whole heads on each part; the split granule keeps nested splits whole too.
    if ((ctx.inputs[0].shape[2] / RotaryHeadDim(ctx)) % parts == 0) {
      sigs.push_back(Sig({S(2)}, {S(2)}));
    }
    sigs.push_back(Sig({P()}, {P()}));
    sigs.push_back(Sig({B()}, {B()}));
    return sigs;
  };
  def.split_granule = [](const OpContext& ctx, int, int axis) -> int64_t {
    return axis == 2 ? RotaryHeadDim(ctx) : 1;
  };
  def.cost = [](const OpContext& ctx) { return ElementwiseCost(ctx, {ctx.inputs[0]}, 3.0); };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0]) return {std::nullopt};
    Attrs attrs = op.attrs;
    attrs.Set("inverse", !op.attrs.GetBool("inverse", false));
    return {b.Add1("rotary", {*dy[0]}, attrs)};
  };
  return def;
}

}  // namespace

void RegisterEmbeddingOps(graph::OpRegistry& registry) {
  registry.Register(MakeEmbedding());
  registry.Register(MakeEmbeddingGrad());
  registry.Register(MakeRotary());
}

}  // namespace twinflow::ops
