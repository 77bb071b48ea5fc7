#pragma once
// Launchers of elementwise_kernels.cu (broadcasting binary ops) for the elementwise and
// reduction families' host code.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"
#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

// kFirst copies operand a (broadcast_like); kScaleFirst writes a * scale (broadcast_reduced_like).
enum class BinaryOp { kAdd, kSub, kMul, kDiv, kFirst, kScaleFirst };

// out[i] = op(a[offset 0], b[offset 1]) over the n elements of `space` (operands 0 and 1).
// dtype f32, bf16, i32 or i64; integers wrap modulo 2^n. Enqueues nothing for n == 0.
void LaunchBinary(BinaryOp op, DType dtype, const void* a, const void* b, void* out, int64_t n,
                  const Strides3& space, double scale, cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
