#pragma once
// The counter-based random numbers on the device: engine/core/hash_mix.h compiled as device
// code, so HashBits and HashUniform are bit-identical to the CPU's, and HashNormal agrees to
// the last bit of a double in almost every case (CUDA's log and cos against glibc's), and after
// rounding to f32 or bf16.
#include <cstdint>

#include "engine/core/hash_mix.h"

namespace twinflow::kernels::cuda {

__device__ __forceinline__ uint64_t HashBits(uint64_t seed, uint64_t index) {
  return hash_mix::Bits(seed, index);
}
__device__ __forceinline__ double HashUniform(uint64_t seed, uint64_t index) {
  return hash_mix::Uniform(seed, index);
}
__device__ __forceinline__ double HashNormal(uint64_t seed, uint64_t index) {
  return hash_mix::Normal(seed, index);
}

}  // namespace twinflow::kernels::cuda
