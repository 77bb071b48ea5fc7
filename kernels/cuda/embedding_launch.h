#pragma once
// Launchers of embedding_kernels.cu (f32, bf16 weights; i32 or i64 ids) and of rotary.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"

namespace twinflow::kernels::cuda {

// The ids and the rows [begin, end) of the logical table that this device's `rows` hold.
struct IdSlice {
  const void* ids = nullptr;
  bool is64 = false;
  int64_t count = 0;  // number of ids
  int64_t begin = 0;
  int64_t end = 0;
  int64_t rows = 0;
};

// out[i, :] = weight[id_i - begin, :] for ids this slice holds, zeros for the others.
void LaunchEmbedding(DType dtype, const void* weight, const IdSlice& s, void* out, int64_t width,
                     cudaStream_t stream);
// dweight[v, :] = sum over ids equal to begin + v, in id order, of dy[i, :]; every row written.
void LaunchEmbeddingGrad(DType dtype, const void* dy, const IdSlice& s, void* dweight,
                         int64_t width, cudaStream_t stream);

// The physical x of a rotary op: [batch, seq, width] of whole heads, its first token at
// logical position first_position.
struct RotaryShape {
  int64_t batch = 0;
  int64_t seq = 0;
  int64_t width = 0;
  int64_t head_dim = 0;
  int64_t first_position = 0;
};
void LaunchRotary(DType dtype, const void* x, void* y, const RotaryShape& shape, double theta,
                  bool inverse, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
