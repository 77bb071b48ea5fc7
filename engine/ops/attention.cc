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

graph::TensorId CausalSelfAttention(GraphBuilder& b, TensorId q, TensorId k, TensorId v,
                                    int64_t heads, const std::string& name, AttentionKind kind) {
  const graph::TensorMeta& meta = b.meta(q);
  if (meta.shape.rank() != 3 || !(b.meta(k) == meta) || !(b.meta(v) == meta)) {
    throw ShapeError("attention '" + name + "': q, k and v must share one [batch, seq, hidden] " +
                     "shape, got " + meta.ToString() + ", " + b.meta(k).ToString() + ", " +
                     b.meta(v).ToString());
  }
  const int64_t batch = meta.shape[0], seq = meta.shape[1], hidden = meta.shape[2];
  if (heads <= 0 || hidden % heads != 0) {
    throw ShapeError("attention '" + name + "': hidden " + std::to_string(hidden) +
                     " is not divisible into " + std::to_string(heads) + " heads");
  }
  if (kind == AttentionKind::kFused) {
    return b.Add("fused_attention", {q, k, v}, Attrs{{"heads", heads}}, name)[0];
  }
  const int64_t head_dim = hidden / heads;
  const std::vector<int64_t> swap = {0, 2, 1, 3};
  // [batch, seq, hidden] -> [batch, heads, seq, head_dim]
  auto split_heads = [&](TensorId t, const std::string& what) {
    const TensorId r =
        b.Add1("reshape", {t}, Attrs{{"shape", std::vector<int64_t>{batch, seq, heads, head_dim}}},
               name + "/" + what + "_reshape");
    return b.Add1("transpose", {r}, Attrs{{"perm", swap}}, name + "/" + what + "_transpose");
  };
  const TensorId qh = split_heads(q, "q");
  const TensorId kh = split_heads(k, "k");
  const TensorId vh = split_heads(v, "v");
  const TensorId scores =
      b.Add1("batch_matmul", {qh, kh}, Attrs{{"transpose_a", false}, {"transpose_b", true}},
             name + "/scores");
  const TensorId scaled =
      b.Add1("scalar_mul", {scores},
             Attrs{{"value", 1.0 / std::sqrt(static_cast<double>(head_dim))}}, name + "/scale");
  const TensorId mask = b.Add1("causal_mask", {scaled}, {}, name + "/mask");
  const TensorId masked = b.Add1("add", {scaled, mask}, {}, name + "/masked");
  const TensorId probs = b.Add1("softmax", {masked}, Attrs{{"axis", int64_t{-1}}}, name + "/probs");
  const TensorId context =
      b.Add1("batch_matmul", {probs, vh}, Attrs{{"transpose_a", false}, {"transpose_b", false}},
             name + "/context");
  const TensorId merged =
      b.Add1("transpose", {context}, Attrs{{"perm", swap}}, name + "/merge_transpose");
  return b.Add1("reshape", {merged}, Attrs{{"shape", std::vector<int64_t>{batch, seq, hidden}}},
                name + "/merge_reshape");
}

}  // namespace twinflow::ops
