#pragma once
// Causal scaled-dot-product self-attention, composed from registered ops only (reshape,
// transpose, batch_matmul, scalar_mul, causal_mask, add, softmax), so it inherits their SBP
// rules, costs and gradients: splitting the batch or the heads needs no extra boxing.
#include <cstdint>
#include <string>

#include "engine/graph/graph_builder.h"

namespace twinflow::ops {

// q, k, v: [batch, seq, hidden] of one dtype, hidden divisible by `heads`. Returns
// softmax(q k^T / sqrt(hidden / heads) + mask) v per head, as [batch, seq, hidden]. Op names
// start with `name` + "/". Throws ShapeError naming `name` on bad shapes.
graph::TensorId CausalSelfAttention(graph::GraphBuilder& builder, graph::TensorId q,
                                    graph::TensorId k, graph::TensorId v, int64_t heads,
                                    const std::string& name = "attention");

}  // namespace twinflow::ops
