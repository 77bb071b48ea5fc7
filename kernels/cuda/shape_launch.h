#pragma once
// Launcher of shape_kernels.cu: the strided box copy behind transpose, slice, slice_grad and
// concat, for elements of 1, 2, 4 or 8 bytes (so one kernel serves every dtype).
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cuda/launch_types.h"

namespace twinflow::kernels::cuda {

void LaunchBoxCopy(const void* src, void* dst, const BoxCopy& box, int64_t element_bytes,
                   cudaStream_t stream);

}  // namespace twinflow::kernels::cuda
