// Device code of embedding, embedding_grad and rotary (one thread per rotated pair, angles in
// double as on the CPU). The embedding gradient is a deterministic scatter-add
// without atomics: one block per table row walks the ids in tiles, each warp finds the
// matching positions with a ballot, and every thread adds the matching dy rows for its
// columns in id order (the CPU's order), up to 8 x 256 columns per scan of the ids. Cost:
// every block reads all ids (rows x ids comparisons), fine for the shapes trained here; a
// stable sort by id would remove it.
#include "engine/core/rotary_angle.h"
#include "kernels/cuda/device_common.cuh"
#include "kernels/cuda/embedding_launch.h"

namespace twinflow::kernels::cuda {
namespace {

// The local row of id i, or -1 when this slice does not hold it (or it is out of range).
__device__ __forceinline__ int64_t LocalRow(const IdSlice& s, int64_t i) {
  const int64_t id = LoadIndex(s.ids, s.is64, i);
  const bool mine = id >= s.begin && id < s.end && id - s.begin < s.rows;
  return mine ? id - s.begin : -1;
}

template <typename T>
__global__ void EmbeddingKernel(const T* w, IdSlice s, T* out, int64_t width) {
  TF_GRID_LOOP(k, s.count * width) {
    const int64_t local = LocalRow(s, k / width);
    out[k] = local >= 0 ? w[local * width + k % width] : T(0.0f);
  }
}

// Columns a thread accumulates in one scan of the ids: a row of up to kColumnsPerThread * 256
// columns (GPT-2's 768 to 2048) costs one scan, not one per 256 columns.
constexpr int kColumnsPerThread = 8;

template <typename T>
__global__ void EmbeddingGradKernel(const T* dy, IdSlice s, T* dw, int64_t width) {
  using A = Acc<T>;
  __shared__ unsigned masks[kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  TF_ROW_LOOP(v, s.rows) {
    for (int64_t c0 = 0; c0 < width; c0 += kColumnsPerThread * blockDim.x) {
      A acc[kColumnsPerThread] = {};
      for (int64_t t0 = 0; t0 < s.count; t0 += blockDim.x) {
        const int64_t i = t0 + threadIdx.x;
        const bool match = i < s.count && LocalRow(s, i) == v;
        const unsigned ballot = __ballot_sync(0xffffffffu, match);
        if (lane == 0) masks[warp] = ballot;
        __syncthreads();
        for (int w = 0; w < kThreads / 32; ++w) {
          for (unsigned m = masks[w]; m != 0; m &= m - 1) {  // set bits, lowest (first id) first
            const int64_t at = t0 + w * 32 + (__ffs(m) - 1);
#pragma unroll
            for (int u = 0; u < kColumnsPerThread; ++u) {
              const int64_t c = c0 + u * blockDim.x + threadIdx.x;
              if (c < width) acc[u] += LoadAs<A>(dy, at * width + c);
            }
          }
        }
        __syncthreads();
      }
#pragma unroll
      for (int u = 0; u < kColumnsPerThread; ++u) {
        const int64_t c = c0 + u * blockDim.x + threadIdx.x;
        if (c < width) StoreAs(dw, v * width + c, acc[u]);
      }
    }
  }
}

template <typename T>
__global__ void RotaryKernel(const T* x, T* y, RotaryShape r, double theta, bool inverse) {
  using A = Acc<T>;
  const int64_t half = r.head_dim / 2;
  const int64_t pairs_per_row = r.width / 2;
  TF_GRID_LOOP(k, r.batch * r.seq * pairs_per_row) {
    const int64_t row = k / pairs_per_row, in_row = k % pairs_per_row;
    const int64_t pair = in_row % half;
    const int64_t at = row * r.width + (in_row / half) * r.head_dim + pair;
    const double angle = rotary::Angle(r.first_position + row % r.seq, pair, r.head_dim, theta);
    double sine, cosine;
    sincos(angle, &sine, &cosine);
    if (inverse) sine = -sine;
    const A a = LoadAs<A>(x, at), c = LoadAs<A>(x, at + half);
    StoreAs(y, at, a * static_cast<A>(cosine) - c * static_cast<A>(sine));
    StoreAs(y, at + half, c * static_cast<A>(cosine) + a * static_cast<A>(sine));
  }
}

}  // namespace

void LaunchRotary(DType dtype, const void* x, void* y, const RotaryShape& shape, double theta,
                  bool inverse, cudaStream_t stream) {
  const int64_t n = shape.batch * shape.seq * (shape.width / 2);
  if (n == 0) return;
  if (dtype == DType::kF32) {
    RotaryKernel<float><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const float*>(x), static_cast<float*>(y), shape, theta, inverse);
  } else {
    RotaryKernel<bf16><<<BlocksFor(n), kThreads, 0, stream>>>(
        static_cast<const bf16*>(x), static_cast<bf16*>(y), shape, theta, inverse);
  }
  TF_CUDA_CHECK_LAUNCH("RotaryKernel");
}

void LaunchEmbedding(DType dtype, const void* weight, const IdSlice& s, void* out, int64_t width,
                     cudaStream_t stream) {
  const int64_t n = s.count * width;
  if (n == 0) return;
  if (dtype == DType::kF32) {
    EmbeddingKernel<<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<const float*>(weight), s,
                                                           static_cast<float*>(out), width);
  } else {
    EmbeddingKernel<<<BlocksFor(n), kThreads, 0, stream>>>(static_cast<const bf16*>(weight), s,
                                                           static_cast<bf16*>(out), width);
  }
  TF_CUDA_CHECK_LAUNCH("EmbeddingKernel");
}

void LaunchEmbeddingGrad(DType dtype, const void* dy, const IdSlice& s, void* dweight,
                         int64_t width, cudaStream_t stream) {
  if (s.rows * width == 0) return;
  if (dtype == DType::kF32) {
    EmbeddingGradKernel<<<RowBlocks(s.rows), kThreads, 0, stream>>>(
        static_cast<const float*>(dy), s, static_cast<float*>(dweight), width);
  } else {
    EmbeddingGradKernel<<<RowBlocks(s.rows), kThreads, 0, stream>>>(
        static_cast<const bf16*>(dy), s, static_cast<bf16*>(dweight), width);
  }
  TF_CUDA_CHECK_LAUNCH("EmbeddingGradKernel");
}

}  // namespace twinflow::kernels::cuda
