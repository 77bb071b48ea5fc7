#pragma once
// The physical problem one device's fused_attention / fused_attention_grad kernel solves, read
// from its KernelContext: the CPU and CUDA kernels share it, so both check shapes alike and
// agree on where heads, rows and log-sum-exps sit.
#include <algorithm>
#include <cstdint>

#include "kernels/kernel.h"

namespace twinflow::kernels {

// This device's rows of q [batch, q_len, hidden] and its whole k, v [batch, kv_len, kv_hidden],
// with `heads` local query heads and `kv_heads` local key-value heads of `head_dim` columns each;
// query head h reads key-value head h / group.
struct AttentionShape {
  int64_t batch = 0, q_len = 0, kv_len = 0, hidden = 0, heads = 0, head_dim = 0;
  int64_t kv_hidden = 0, kv_heads = 0, group = 1;
  int64_t q_offset = 0;  // the logical position of this device's first query
  bool causal = true;
  double scale = 1;  // 1 / sqrt(head_dim)

  // Keys a query row attends to: [0, end).
  int64_t KeyEnd(int64_t row) const {
    return causal ? std::min(kv_len, q_offset + row + 1) : kv_len;
  }
  // The first element of head h in row i of batch b of a [batch, len, hidden] tensor.
  int64_t Row(int64_t b, int64_t i, int64_t len, int64_t h) const {
    return (b * len + i) * hidden + h * head_dim;
  }
  // The first element of the key-value head query head h reads, in row j of batch b of k or v.
  int64_t KvRow(int64_t b, int64_t j, int64_t h) const {
    return (b * kv_len + j) * kv_hidden + (h / group) * head_dim;
  }
  int64_t LseIndex(int64_t b, int64_t h, int64_t i) const { return (b * heads + h) * q_len + i; }
  Shape LseShape() const { return Shape{batch, heads, q_len}; }
};

// Checks inputs 0..2 (q, k, v) and the attrs; ShapeError naming `op` when this device's hidden
// columns do not hold whole heads (an N-D split the 1-D rules could not see).
AttentionShape CheckAttention(const KernelContext& ctx, const char* op);
// Also checks the outputs (out, lse), or for the gradient the inputs out, lse, dout, the optional
// dlse and the outputs dq, dk, dv.
AttentionShape CheckAttentionForward(const KernelContext& ctx);
AttentionShape CheckAttentionGrad(const KernelContext& ctx);

}  // namespace twinflow::kernels
