#include "engine/ops/attention.h"

#include <cmath>
#include <vector>

#include "engine/core/error.h"

namespace twinflow::ops {

using graph::GraphBuilder;
using graph::TensorId;

const char* AttentionKindName(AttentionKind kind) {
  return kind == AttentionKind::kFused ? "fused" : "unfused";
}

AttentionKind ParseAttentionKind(const std::string& text) {
  for (AttentionKind kind : {AttentionKind::kUnfused, AttentionKind::kFused}) {
    if (text == AttentionKindName(kind)) return kind;
  }
  throw InvalidArgumentError("attention must be unfused or fused, got '" + text + "'");
}

namespace {

TensorId Reshape(GraphBuilder& b, TensorId t, std::vector<int64_t> shape, const std::string& name) {
  return b.Add1("reshape", {t}, Attrs{{"shape", std::move(shape)}}, name);
}
TensorId Transpose(GraphBuilder& b, TensorId t, std::vector<int64_t> perm,
                   const std::string& name) {
  return b.Add1("transpose", {t}, Attrs{{"perm", std::move(perm)}}, name);
}

// The dimensions of one attention: query heads in kv_heads groups of `group`.
struct Heads {
  int64_t batch, seq, hidden, heads, kv_heads, group, head_dim;
};

// scores [..., S, S] (any leading axes) -> softmax(scores / sqrt(d) + causal mask), as one
// fused softmax (Megatron's masked-softmax fusion): one pass over the scores each way instead
// of a scale, a mask add and a softmax.
TensorId MaskedProbabilities(GraphBuilder& b, TensorId scores, const Heads& h,
                             const std::string& name) {
  return b.Add1("softmax", {scores},
                Attrs{{"axis", int64_t{-1}},
                      {"scale", 1.0 / std::sqrt(static_cast<double>(h.head_dim))},
                      {"causal", true}},
                name + "/probs");
}

// One key-value head per query head: [batch, heads, seq, d] products.
TensorId MultiHead(GraphBuilder& b, TensorId q, TensorId k, TensorId v, const Heads& h,
                   const std::string& name) {
  const std::vector<int64_t> swap = {0, 2, 1, 3};
  // [batch, seq, hidden] -> [batch, heads, seq, head_dim]
  auto split_heads = [&](TensorId t, const std::string& what) {
    const TensorId r =
        Reshape(b, t, {h.batch, h.seq, h.heads, h.head_dim}, name + "/" + what + "_reshape");
    return Transpose(b, r, swap, name + "/" + what + "_transpose");
  };
  const TensorId scores =
      b.Add1("batch_matmul", {split_heads(q, "q"), split_heads(k, "k")},
             Attrs{{"transpose_a", false}, {"transpose_b", true}}, name + "/scores");
  const TensorId probs = MaskedProbabilities(b, scores, h, name);
  const TensorId context =
      b.Add1("batch_matmul", {probs, split_heads(v, "v")},
             Attrs{{"transpose_a", false}, {"transpose_b", false}}, name + "/context");
  return Reshape(b, Transpose(b, context, swap, name + "/merge_transpose"),
                 {h.batch, h.seq, h.hidden}, name + "/merge_reshape");
}

// Grouped-query: the `group` query heads of each key-value head are stacked along the sequence,
// [batch, kv_heads, group * seq, d], so one batch_matmul per key-value head serves the group
// and keys and values are never repeated.
TensorId Grouped(GraphBuilder& b, TensorId q, TensorId k, TensorId v, const Heads& h,
                 const std::string& name) {
  const int64_t rows = h.group * h.seq;
  const TensorId qg = Reshape(
      b,
      Transpose(
          b, Reshape(b, q, {h.batch, h.seq, h.kv_heads, h.group, h.head_dim}, name + "/q_reshape"),
          {0, 2, 3, 1, 4}, name + "/q_transpose"),
      {h.batch, h.kv_heads, rows, h.head_dim}, name + "/q_group");
  auto split_kv = [&](TensorId t, const std::string& what) {
    const TensorId r =
        Reshape(b, t, {h.batch, h.seq, h.kv_heads, h.head_dim}, name + "/" + what + "_reshape");
    return Transpose(b, r, {0, 2, 1, 3}, name + "/" + what + "_transpose");
  };
  const TensorId scores =
      b.Add1("batch_matmul", {qg, split_kv(k, "k")},
             Attrs{{"transpose_a", false}, {"transpose_b", true}}, name + "/scores");
  // The mask needs [..., seq, seq]: each query head's own square.
  const TensorId squares =
      Reshape(b, scores, {h.batch, h.kv_heads, h.group, h.seq, h.seq}, name + "/scores_by_head");
  const TensorId probs = Reshape(b, MaskedProbabilities(b, squares, h, name),
                                 {h.batch, h.kv_heads, rows, h.seq}, name + "/probs_group");
  const TensorId context =
      b.Add1("batch_matmul", {probs, split_kv(v, "v")},
             Attrs{{"transpose_a", false}, {"transpose_b", false}}, name + "/context");
  const TensorId heads = Reshape(b, context, {h.batch, h.kv_heads, h.group, h.seq, h.head_dim},
                                 name + "/context_by_head");
  return Reshape(b, Transpose(b, heads, {0, 3, 1, 2, 4}, name + "/merge_transpose"),
                 {h.batch, h.seq, h.hidden}, name + "/merge_reshape");
}

}  // namespace

graph::TensorId CausalSelfAttention(GraphBuilder& b, TensorId q, TensorId k, TensorId v,
                                    int64_t heads, const std::string& name, AttentionKind kind,
                                    int64_t kv_heads) {
  const graph::TensorMeta& meta = b.meta(q);
  if (kv_heads == 0) kv_heads = heads;
  const bool shapes_ok = meta.shape.rank() == 3 && heads > 0 && meta.shape[2] % heads == 0 &&
                         kv_heads > 0 && heads % kv_heads == 0;
  if (!shapes_ok) {
    throw ShapeError("attention '" + name + "': hidden " +
                     (meta.shape.rank() == 3 ? std::to_string(meta.shape[2]) : meta.ToString()) +
                     " is not divisible into " + std::to_string(heads) + " heads in groups of " +
                     std::to_string(kv_heads) + " key-value heads");
  }
  const Heads h{meta.shape[0], meta.shape[1],    meta.shape[2],        heads,
                kv_heads,      heads / kv_heads, meta.shape[2] / heads};
  const graph::TensorMeta kv{Shape{h.batch, h.seq, kv_heads * h.head_dim}, meta.dtype};
  if (!(b.meta(k) == kv) || !(b.meta(v) == kv)) {
    throw ShapeError("attention '" + name + "': k and v must be " + kv.ToString() + " for q " +
                     meta.ToString() + ", got " + b.meta(k).ToString() + ", " +
                     b.meta(v).ToString());
  }
  if (kind == AttentionKind::kFused) {
    Attrs attrs{{"heads", heads}};
    if (kv_heads != heads) attrs.Set("kv_heads", kv_heads);
    return b.Add("fused_attention", {q, k, v}, attrs, name)[0];
  }
  return h.group == 1 ? MultiHead(b, q, k, v, h, name) : Grouped(b, q, k, v, h, name);
}

}  // namespace twinflow::ops
