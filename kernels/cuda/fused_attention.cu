// CUDA kernels of fused_attention and fused_attention_grad. One warp owns one row (a query row
// forward and for dq, a key row for dk and dv); its 32 lanes hold eight columns each of the
// head, and dot products are reduced with a fixed butterfly of shuffles. The forward keeps an
// online softmax (running maximum and sum), so the [seq, seq] scores exist only as one score at
// a time, and saves each row's log-sum-exp; the gradient recomputes the probabilities from it.
// No atomics: every output element is written by one lane, summing in key (or query) order, so
// reruns are bit-identical. Under grouped-query attention the warp of a key row sums over the
// group's query heads in head order. This favours simplicity over speed: it uses no tensor cores.
#include <cuda_bf16.h>

#include <cmath>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/fused_attention_launch.h"

namespace twinflow::kernels::cuda {
namespace {

constexpr int kLanes = 32;
constexpr int kPerLane = kMaxAttentionHeadDim / kLanes;
constexpr int kWarpsPerBlock = 8;

__device__ inline float Load(const float* p, int64_t i) { return p[i]; }
__device__ inline float Load(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ inline void Store(float* p, int64_t i, float v) { p[i] = v; }
__device__ inline void Store(__nv_bfloat16* p, int64_t i, float v) {
  p[i] = __float2bfloat16_rn(v);
}

__device__ inline float WarpSum(float v) {
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  }
  return v;
}

// A head's row of a [batch, len, hidden] tensor, as this lane's columns.
struct Lane {
  int lane;
  int64_t head_dim;
  __device__ bool Has(int t) const { return lane + t * kLanes < head_dim; }
  __device__ int64_t Col(int t) const { return lane + t * kLanes; }
};

template <typename T>
__device__ void LoadRow(const T* base, const Lane& l, float (&row)[kPerLane]) {
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) row[t] = l.Has(t) ? Load(base, l.Col(t)) : 0.f;
}

template <typename T>
__device__ float Dot(const float (&row)[kPerLane], const T* base, const Lane& l) {
  float sum = 0.f;
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) {
    if (l.Has(t)) sum += row[t] * Load(base, l.Col(t));
  }
  return WarpSum(sum);
}

__device__ inline int64_t RowOffset(const AttentionDims& d, int64_t b, int64_t i, int64_t len,
                                    int64_t h) {
  return (b * len + i) * d.hidden + h * d.head_dim;
}
// Row j of the key-value head that query head h reads, in k or v.
__device__ inline int64_t KvOffset(const AttentionDims& d, int64_t b, int64_t j, int64_t h) {
  return (b * d.kv_len + j) * d.kv_hidden + (h / d.group) * d.head_dim;
}
__device__ inline int64_t KeyEnd(const AttentionDims& d, int64_t row) {
  return d.causal ? min(d.kv_len, d.q_offset + row + 1) : d.kv_len;
}

// grid: (row blocks, batch * heads); one warp per query row.
template <typename T>
__global__ void ForwardKernel(AttentionDims d, const T* q, const T* k, const T* v, T* out,
                              float* lse) {
  const int64_t bh = blockIdx.x, b = bh / d.heads, h = bh % d.heads;
  const int64_t i = static_cast<int64_t>(blockIdx.y) * kWarpsPerBlock + threadIdx.x / kLanes;
  if (i >= d.q_len) return;
  const Lane l{static_cast<int>(threadIdx.x % kLanes), d.head_dim};
  float qi[kPerLane], acc[kPerLane] = {};
  LoadRow(q + RowOffset(d, b, i, d.q_len, h), l, qi);
  float max = -INFINITY, sum = 0.f;
  for (int64_t j = 0, end = KeyEnd(d, i); j < end; ++j) {
    const float s = Dot(qi, k + KvOffset(d, b, j, h), l) * d.scale;
    const float next = fmaxf(max, s);
    const float rescale = expf(max - next), p = expf(s - next);
    const T* vj = v + KvOffset(d, b, j, h);
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      if (l.Has(t)) acc[t] = acc[t] * rescale + p * Load(vj, l.Col(t));
    }
    sum = sum * rescale + p;
    max = next;
  }
  // Only a row that sees no key is empty (zeros, lse -inf); a NaN among the scores makes sum
  // NaN, and the row and its lse NaN, as on the CPU (a test of sum > 0 would hide it).
  const bool empty = KeyEnd(d, i) == 0;
  T* oi = out + RowOffset(d, b, i, d.q_len, h);
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) {
    if (l.Has(t)) Store(oi, l.Col(t), empty ? 0.f : acc[t] / sum);
  }
  if (l.lane == 0) lse[bh * d.q_len + i] = empty ? -INFINITY : max + logf(sum);
}

// delta_i = dout_i . out_i - dlse_i: the softmax gradient's row term.
template <typename T>
__device__ float Delta(const AttentionDims& d, const AttentionGradArgs& a, int64_t b, int64_t h,
                       int64_t i, const float (&dout_i)[kPerLane], const Lane& l) {
  const float dot = Dot(dout_i, static_cast<const T*>(a.out) + RowOffset(d, b, i, d.q_len, h), l);
  return dot - (a.dlse ? a.dlse[(b * d.heads + h) * d.q_len + i] : 0.f);
}

// dq_i = scale * sum_j p_ij (dout_i . v_j - delta_i) k_j; one warp per query row.
template <typename T>
__global__ void GradQueryKernel(AttentionDims d, AttentionGradArgs a) {
  const int64_t bh = blockIdx.x, b = bh / d.heads, h = bh % d.heads;
  const int64_t i = static_cast<int64_t>(blockIdx.y) * kWarpsPerBlock + threadIdx.x / kLanes;
  if (i >= d.q_len) return;
  const Lane l{static_cast<int>(threadIdx.x % kLanes), d.head_dim};
  const T *k = static_cast<const T*>(a.k), *v = static_cast<const T*>(a.v);
  float qi[kPerLane], douti[kPerLane], dq[kPerLane] = {};
  LoadRow(static_cast<const T*>(a.q) + RowOffset(d, b, i, d.q_len, h), l, qi);
  LoadRow(static_cast<const T*>(a.dout) + RowOffset(d, b, i, d.q_len, h), l, douti);
  const float delta = Delta<T>(d, a, b, h, i, douti, l);
  if (l.lane == 0) a.delta[bh * d.q_len + i] = delta;  // for the dk/dv kernel, which follows
  const float lse = a.lse[bh * d.q_len + i];
  for (int64_t j = 0, end = KeyEnd(d, i); j < end; ++j) {
    const T* kj = k + KvOffset(d, b, j, h);
    const float p = expf(Dot(qi, kj, l) * d.scale - lse);
    const float ds = p * (Dot(douti, v + KvOffset(d, b, j, h), l) - delta) * d.scale;
#pragma unroll
    for (int t = 0; t < kPerLane; ++t) {
      if (l.Has(t)) dq[t] += ds * Load(kj, l.Col(t));
    }
  }
  T* out = static_cast<T*>(a.dq) + RowOffset(d, b, i, d.q_len, h);
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) {
    if (l.Has(t)) Store(out, l.Col(t), dq[t]);
  }
}

// dk_j = scale * sum_i ds_ij q_i and dv_j = sum_i p_ij dout_i over the queries that see key j,
// of every query head of key-value head kvh (in head order); one warp per key row.
template <typename T>
__global__ void GradKeyValueKernel(AttentionDims d, AttentionGradArgs a) {
  const int64_t kv_heads = d.heads / d.group;
  const int64_t bkv = blockIdx.x, b = bkv / kv_heads, kvh = bkv % kv_heads;
  const int64_t j = static_cast<int64_t>(blockIdx.y) * kWarpsPerBlock + threadIdx.x / kLanes;
  if (j >= d.kv_len) return;
  const Lane l{static_cast<int>(threadIdx.x % kLanes), d.head_dim};
  const T *q = static_cast<const T*>(a.q), *dout = static_cast<const T*>(a.dout);
  float kj[kPerLane], vj[kPerLane], dk[kPerLane] = {}, dv[kPerLane] = {};
  const int64_t kv_row = KvOffset(d, b, j, kvh * d.group);
  LoadRow(static_cast<const T*>(a.k) + kv_row, l, kj);
  LoadRow(static_cast<const T*>(a.v) + kv_row, l, vj);
  const int64_t first = d.causal ? max(int64_t{0}, j - d.q_offset) : 0;
  for (int64_t h = kvh * d.group; h < (kvh + 1) * d.group; ++h) {
    const int64_t bh = b * d.heads + h;
    for (int64_t i = first; i < d.q_len; ++i) {
      const T* qi = q + RowOffset(d, b, i, d.q_len, h);
      const T* douti = dout + RowOffset(d, b, i, d.q_len, h);
      float dout_row[kPerLane];
      LoadRow(douti, l, dout_row);
      const float p = expf(Dot(kj, qi, l) * d.scale - a.lse[bh * d.q_len + i]);
      const float ds = p * (Dot(vj, douti, l) - a.delta[bh * d.q_len + i]) * d.scale;
#pragma unroll
      for (int t = 0; t < kPerLane; ++t) {
        if (!l.Has(t)) continue;
        dk[t] += ds * Load(qi, l.Col(t));
        dv[t] += p * dout_row[t];
      }
    }
  }
  T* dk_row = static_cast<T*>(a.dk) + kv_row;
  T* dv_row = static_cast<T*>(a.dv) + kv_row;
#pragma unroll
  for (int t = 0; t < kPerLane; ++t) {
    if (!l.Has(t)) continue;
    Store(dk_row, l.Col(t), dk[t]);
    Store(dv_row, l.Col(t), dv[t]);
  }
}

// x: batch * heads (up to 2^31 - 1), y: blocks of rows (up to 65535, 524,280 rows).
dim3 Grid(int64_t rows, int64_t heads, const AttentionDims& d) {
  return dim3(static_cast<unsigned>(d.batch * heads),
              static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock));
}

template <typename T>
void Forward(const AttentionDims& d, const AttentionForwardArgs& a, cudaStream_t stream) {
  ForwardKernel<T><<<Grid(d.q_len, d.heads, d), kWarpsPerBlock * kLanes, 0, stream>>>(
      d, static_cast<const T*>(a.q), static_cast<const T*>(a.k), static_cast<const T*>(a.v),
      static_cast<T*>(a.out), a.lse);
  TF_CUDA_CHECK_LAUNCH("fused attention");
}

template <typename T>
void Grad(const AttentionDims& d, const AttentionGradArgs& a, cudaStream_t stream) {
  if (d.q_len > 0) {
    GradQueryKernel<T><<<Grid(d.q_len, d.heads, d), kWarpsPerBlock * kLanes, 0, stream>>>(d, a);
    TF_CUDA_CHECK_LAUNCH("fused attention");
  }
  if (d.kv_len > 0) {
    GradKeyValueKernel<T>
        <<<Grid(d.kv_len, d.heads / d.group, d), kWarpsPerBlock * kLanes, 0, stream>>>(d, a);
    TF_CUDA_CHECK_LAUNCH("fused attention");
  }
}

}  // namespace

void LaunchAttentionForward(const AttentionDims& d, const AttentionForwardArgs& a,
                            cudaStream_t stream) {
  if (d.q_len == 0 || d.batch * d.heads == 0) return;
  d.bf16 ? Forward<__nv_bfloat16>(d, a, stream) : Forward<float>(d, a, stream);
}

void LaunchAttentionGrad(const AttentionDims& d, const AttentionGradArgs& a, cudaStream_t stream) {
  if (d.batch * d.heads == 0) return;
  d.bf16 ? Grad<__nv_bfloat16>(d, a, stream) : Grad<float>(d, a, stream);
}

}  // namespace twinflow::kernels::cuda
