#pragma once
// Launcher of reduce_into.cu: dst = op(dst, src) elementwise over n elements, what the runtime
// needs for gradient accumulation and in-process all-reduces on a GPU. bf16 and f16 are summed
// in float and rounded once, and max/min keep a NaN, as Tensor::ReduceFrom does on the host.
#include <cuda_runtime_api.h>

#include <cstdint>

#include "engine/core/dtype.h"
#include "engine/core/reduce_op.h"
#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

// Enqueues on `stream`; nothing for n == 0. InvalidArgumentError for an unknown dtype.
void LaunchReduceInto(void* dst, const void* src, int64_t n, DType dtype, ReduceOp op,
                      cudaStream_t stream);
// The same over a box: dst[to] = op(dst[to], src[from]) at the offsets `box` gives (MakeBox).
void LaunchReduceBoxInto(void* dst, const void* src, const BoxCopy& box, DType dtype, ReduceOp op,
                         cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
