// fused_attention and fused_attention_grad: scaled-dot-product self-attention as one op, as
// FlashAttention computes it. The [seq, seq] scores are never a tensor: kernels keep one row
// (CPU) or one tile (CUDA) of them at a time and save only each row's log-sum-exp, so memory is
// O(sequence). The gradient recomputes the scores from q, k and that log-sum-exp.
//
// q and out are [batch, seq, hidden], head h owning columns [h*d, (h+1)*d) of hidden
// (d = hidden / heads), which is where the unfused graph's reshape puts it. k and v are
// [batch, seq, kv_heads * d]: with attr kv_heads below heads (grouped-query attention, Ainslie
// et al. 2023) each run of heads / kv_heads query heads shares one key and value head, which is
// never copied. lse is [batch, heads, seq] in f32 (f64 for f64 inputs).
#include <cmath>

#include "engine/ops/op_families.h"
#include "engine/ops/op_helpers.h"

namespace twinflow::ops {
namespace {

int64_t Heads(const OpContext& ctx) {
  const int64_t heads = ctx.attrs.GetInt("heads", 0);
  const int64_t hidden = ctx.inputs[0].shape[2];
  if (heads <= 0 || hidden % heads != 0) {
    ThrowInvalid(ctx, "attr heads = " + std::to_string(heads) +
                          " must be positive and divide hidden " + std::to_string(hidden));
  }
  return heads;
}

// Attr kv_heads (default: heads), which must divide heads.
int64_t KvHeads(const OpContext& ctx) {
  const int64_t heads = Heads(ctx);
  const int64_t kv_heads = ctx.attrs.GetInt("kv_heads", heads);
  if (kv_heads <= 0 || heads % kv_heads != 0) {
    ThrowInvalid(ctx, "attr kv_heads = " + std::to_string(kv_heads) +
                          " must be positive and divide heads " + std::to_string(heads));
  }
  return kv_heads;
}

// Checks q and the inputs `like_q` (out, dout) share one [batch, seq, hidden] meta, and k, v
// are [batch, seq, kv_heads * head_dim] of the same dtype.
void CheckQkv(const OpContext& ctx, const std::vector<int>& like_q) {
  CheckRank(ctx, 0, 3, "q");
  CheckFloat(ctx, 0, "q");
  const Shape& q = ctx.inputs[0].shape;
  const Shape kv{q[0], q[1], q[2] / Heads(ctx) * KvHeads(ctx)};
  for (int i : {1, 2}) {
    CheckShapeEq(ctx, i, kv, i == 1 ? "k" : "v");
    CheckSameDType(ctx, 0, i);
  }
  for (int i : like_q) {
    CheckShapeEq(ctx, i, q);
    CheckSameDType(ctx, 0, i);
  }
}

DType LseDType(DType dtype) { return dtype == DType::kF64 ? DType::kF64 : DType::kF32; }

TensorMeta LseMeta(const OpContext& ctx) {
  const Shape& q = ctx.inputs[0].shape;
  return {Shape{q[0], Heads(ctx), q[1]}, LseDType(ctx.inputs[0].dtype)};
}

// The 1-D layouts of (q, k, v) with (out, lse) for one way of dividing the work. The gradient
// reuses them, adding out, lse and dout.
struct Division {
  sbp::Sbp q, kv, out, lse;
};

// k's columns split only into whole key-value heads; q, v and the rest follow k in every
// division, so checking k is enough.
int64_t KeyHeadGranule(const OpContext& ctx, int tensor, int axis) {
  return tensor == 1 && axis == 2 ? ctx.inputs[0].shape[2] / Heads(ctx) : 1;
}

std::vector<Division> Divisions(const OpContext& ctx, int64_t parts) {
  std::vector<Division> divisions{{S(0), S(0), S(0), S(0)}};  // batch
  // Heads, when each part gets whole key-value heads (so whole groups of query heads); the
  // split granule keeps nested splits of several mesh axes whole too.
  if (KvHeads(ctx) % parts == 0) divisions.push_back({S(2), S(2), S(2), S(1)});
  // Queries, with every key and value on each part (a causal row needs all keys before it).
  divisions.push_back({S(1), B(), S(1), S(2)});
  divisions.push_back({B(), B(), B(), B()});
  return divisions;
}

// The work is the two matmuls per head (q k^T and p v), halved under the causal mask, and the
// row softmax; the gradient recomputes q k^T and adds three more matmuls (dv, dp, dq and dk).
graph::OpCost AttentionCost(const OpContext& ctx, double matmuls, int64_t written) {
  const Shape& q = ctx.inputs[0].shape;
  const double causal = ctx.attrs.GetBool("causal", true) ? 0.5 : 1.0;
  const double pairs = static_cast<double>(q[0]) * q[1] * q[1] * causal;
  graph::OpCost cost;
  cost.flops = matmuls * 2.0 * pairs * q[2] + 5.0 * pairs * Heads(ctx);
  cost.bytes_read = InputBytes(ctx);
  cost.bytes_written = written;
  return cost;
}

std::string AttentionParallelism(const OpContext&, const SbpSignature& sig) {
  const sbp::Sbp& q = sig.inputs[0];
  if (q.is_broadcast()) return "replicated";
  if (q.axis == 0) return "batch";
  if (q.axis == 2) return "heads";
  return "sequence (queries)";
}

OpDef MakeFusedAttention() {
  OpDef def;
  def.type = "fused_attention";
  def.kernel_class = graph::KernelClass::kAttention;
  def.min_inputs = def.max_inputs = 3;
  def.num_outputs = 2;
  def.infer = [](const OpContext& ctx) {
    CheckInputCount(ctx, 3);
    CheckQkv(ctx, {});
    return std::vector<TensorMeta>{ctx.inputs[0], LseMeta(ctx)};
  };
  def.signatures = [](const OpContext& ctx, int64_t parts) {
    std::vector<SbpSignature> sigs;
    for (const Division& d : Divisions(ctx, parts))
      sigs.push_back(Sig({d.q, d.kv, d.kv}, {d.out, d.lse}));
    sigs.push_back(Sig({B(), B(), P()}, {P(), B()}));  // out is linear in v; lse does not read it
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    return AttentionCost(ctx, 2, Bytes(ctx.inputs[0]) + Bytes(LseMeta(ctx)));
  };
  def.gradient = [](GraphBuilder& b, const OpNode& op, const Grads& dy) -> Grads {
    if (!dy[0] && !dy[1]) return {std::nullopt, std::nullopt, std::nullopt};
    const TensorId out = op.outputs[0], lse = op.outputs[1];
    std::vector<TensorId> inputs{op.inputs[0], op.inputs[1],
                                 op.inputs[2], out,
                                 lse,          dy[0] ? *dy[0] : b.Add1("zeros_like", {out})};
    if (dy[1]) inputs.push_back(*dy[1]);  // only a probe or a loss on lse reads it
    const std::vector<TensorId> g = b.Add("fused_attention_grad", inputs, op.attrs);
    return {g[0], g[1], g[2]};
  };
  def.split_granule = KeyHeadGranule;
  def.parallelism = AttentionParallelism;
  return def;
}

// fused_attention_grad(q, k, v, out, lse, dout[, dlse]) -> (dq, dk, dv). Linear in (dout,
// dlse), so partial ones give partial gradients; under a query split each part's keys and values
// get a partial gradient from its own queries.
OpDef MakeFusedAttentionGrad() {
  OpDef def;
  def.type = "fused_attention_grad";
  def.kernel_class = graph::KernelClass::kAttention;
  def.min_inputs = 6;
  def.max_inputs = 7;
  def.num_outputs = 3;
  def.infer = [](const OpContext& ctx) {
    if (ctx.inputs.size() != 6 && ctx.inputs.size() != 7) {
      ThrowInvalid(ctx, "expected 6 or 7 inputs, got " + std::to_string(ctx.inputs.size()));
    }
    CheckQkv(ctx, {3, 5});
    const TensorMeta lse = LseMeta(ctx);
    for (size_t i = 4; i < ctx.inputs.size(); i += 2) {
      CheckShapeEq(ctx, static_cast<int>(i), lse.shape, i == 4 ? "lse" : "dlse");
      if (ctx.inputs[i].dtype != lse.dtype) {
        ThrowInvalid(ctx, std::string("lse and dlse must be ") + DTypeName(lse.dtype));
      }
    }
    return std::vector<TensorMeta>{ctx.inputs[0], ctx.inputs[1], ctx.inputs[2]};
  };
  def.signatures = [](const OpContext& ctx, int64_t parts) {
    const bool with_dlse = ctx.inputs.size() == 7;
    std::vector<SbpSignature> sigs;
    for (const Division& d : Divisions(ctx, parts)) {
      const sbp::Sbp dkv = d.q.is_split() && d.kv.is_broadcast() ? P() : d.kv;
      std::vector<sbp::Sbp> in{d.q, d.kv, d.kv, d.out, d.lse, d.out};
      if (with_dlse) in.push_back(d.lse);
      sigs.push_back(Sig(in, {d.q, dkv, dkv}));
    }
    std::vector<sbp::Sbp> partial{B(), B(), B(), B(), B(), P()};
    if (with_dlse) partial.push_back(P());
    sigs.push_back(Sig(partial, {P(), P(), P()}));
    return sigs;
  };
  def.cost = [](const OpContext& ctx) {
    return AttentionCost(ctx, 5,
                         Bytes(ctx.inputs[0]) + Bytes(ctx.inputs[1]) + Bytes(ctx.inputs[2]));
  };
  def.split_granule = KeyHeadGranule;
  def.parallelism = AttentionParallelism;
  return def;
}

}  // namespace

void RegisterFusedAttentionOps(graph::OpRegistry& registry) {
  registry.Register(MakeFusedAttention());
  registry.Register(MakeFusedAttentionGrad());
}

}  // namespace twinflow::ops
