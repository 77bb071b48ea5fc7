#pragma once
// The launch interface of the fused attention CUDA kernels (fused_attention.cu), in plain types
// so that the .cu file needs no engine header. fused_attention_kernels.cc fills it from the
// checked AttentionShape and calls the launchers, which enqueue on `stream` and return.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace twinflow::kernels::cuda {

// Head dims up to this fit the per-lane registers (eight columns per lane of a warp).
inline constexpr int kMaxAttentionHeadDim = 256;
// Rows (queries, keys) up to this fit the grid's y dimension (65535 blocks of eight warps).
inline constexpr int64_t kMaxAttentionRows = int64_t{65535} * 8;

// As AttentionShape (kernels/attention_shape.h): query head h reads key-value head h / group.
struct AttentionDims {
  int64_t batch = 0, q_len = 0, kv_len = 0, hidden = 0, heads = 0, head_dim = 0, q_offset = 0;
  int64_t kv_hidden = 0, group = 1;
  bool causal = true;
  float scale = 1;
  bool bf16 = false;  // q, k, v, out (and the gradients) are bf16; lse is always f32
};

struct AttentionForwardArgs {
  const void *q, *k, *v;
  void* out;
  float* lse;
};

struct AttentionGradArgs {
  const void *q, *k, *v, *out, *dout;
  const float* lse;
  const float* dlse;  // null when the op has no dlse input
  void *dq, *dk, *dv;
  // Scratch of batch * heads * q_len floats: each query row's delta (dout . out - dlse), written
  // by the dq kernel and read by the dk/dv kernel, which would otherwise recompute it for every
  // key row.
  float* delta;
};

// Both throw DeviceError (cuda_check.h) when a launch fails.
void LaunchAttentionForward(const AttentionDims& dims, const AttentionForwardArgs& args,
                            cudaStream_t stream);
void LaunchAttentionGrad(const AttentionDims& dims, const AttentionGradArgs& args,
                         cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
