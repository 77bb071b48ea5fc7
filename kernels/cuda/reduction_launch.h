#pragma once
// Launchers of reduction_kernels.cu: the deterministic strided reduction (one block per output
// element, a fixed tree inside the block) and reduce_max_grad.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"
#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

enum class ReduceKind { kSum, kMax };

// out[o] = scale * sum (or max) of `in` over the reduced axes of output o. f32 sums accumulate
// in double, bf16 in float, i32/i64 wrap (scale ignored). An empty reduction gives 0 (sum) or
// -inf (max). dtype f32, bf16, i32 or i64 (max: f32, bf16).
void LaunchReduce(ReduceKind kind, DType dtype, const void* in, void* out, const ReduceSpace& space,
                  double scale, cudaStream_t stream);

// dx = dy where x equals its maximum y, 0 * dy elsewhere, NaN where x or y is NaN; operand 0
// of `space` walks y and dy (x and dx are flat). dtype f32 or bf16.
void LaunchReduceMaxGrad(DType dtype, const void* x, const void* y, const void* dy, void* dx,
                         int64_t n, const Strides3& space, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
