#pragma once
// Every CUDA kernel (kernels/cuda), registered under DeviceType::kCuda: f32 and bf16 (bf16
// stored, computed in float) for every op type with a CPU kernel, and i32/i64 (and the other
// storage types for pure data movement) where the CPU registers them. Kernels read their env
// from KernelContext::cuda and only enqueue work on its stream (docs/kernels.md).
#include "kernels/kernel.h"

namespace twinflow::kernels {

void RegisterCudaKernels(KernelRegistry& registry);

}  // namespace twinflow::kernels
