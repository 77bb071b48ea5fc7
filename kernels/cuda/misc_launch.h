#pragma once
// Launchers of misc_kernels.cu: constant fills, seeded variable initialisation, the causal
// mask and dropout. Random values and masks are functions of the logical element index
// (LogicalIndexer), bit-identical to engine/core/hash_random.h on the CPU.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"
#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

// out = value converted to `dtype` (as Tensor::Fill does).
void LaunchFill(DType dtype, void* out, int64_t n, double value, cudaStream_t stream);

enum class RandomInit { kNormal, kUniform };
// normal: scale * HashNormal(seed, i); uniform: scale * (2 HashUniform(seed, i) - 1), i the
// logical index; stored to `dtype`.
void LaunchRandomInit(RandomInit init, DType dtype, void* out, const LogicalIndexer& ix,
                      uint64_t seed, double scale, cudaStream_t stream);

// 0 on and below the diagonal of the logical [rows, cols] matrix, -1e9 above; `cols` logical.
void LaunchCausalMask(DType dtype, void* out, const LogicalIndexer& ix, int64_t cols,
                      cudaStream_t stream);

// y = x / (1 - rate) where HashUniform(seed, logical index) >= rate, else x * 0 (f32, bf16).
void LaunchDropout(DType dtype, const void* x, void* y, const LogicalIndexer& ix, double rate,
                   uint64_t seed, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
