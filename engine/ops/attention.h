#pragma once
// Causal scaled-dot-product self-attention, in one of two forms: composed from registered ops
// only (reshape, transpose, batch_matmul, softmax with its scale and causal mask fused), so it
// inherits their SBP rules, costs and gradients, or as the one fused_attention op
// (fused_attention_ops.cc), which never holds the [seq, seq] scores.
#include <cstdint>
#include <string>

#include "engine/graph/graph_builder.h"

namespace twinflow::ops {

enum class AttentionKind { kUnfused, kFused };
const char* AttentionKindName(AttentionKind kind);          // "unfused", "fused"
AttentionKind ParseAttentionKind(const std::string& text);  // InvalidArgumentError naming it

// q: [batch, seq, hidden], hidden divisible by `heads`; k, v: [batch, seq, kv_heads * d] with
// d = hidden / heads, of q's dtype. kv_heads 0 means heads; fewer is grouped-query attention:
// query head h reads key-value head h / (heads / kv_heads), and no key or value is copied (the
// unfused graph groups the queries instead). Returns softmax(q k^T / sqrt(d) + mask) v per
// head, as [batch, seq, hidden]. Op names start with `name` + "/" (unfused); the fused op is
// named `name`. Throws ShapeError naming `name` on bad shapes.
graph::TensorId CausalSelfAttention(graph::GraphBuilder& builder, graph::TensorId q,
                                    graph::TensorId k, graph::TensorId v, int64_t heads,
                                    const std::string& name = "attention",
                                    AttentionKind kind = AttentionKind::kUnfused,
                                    int64_t kv_heads = 0);

}  // namespace twinflow::ops
