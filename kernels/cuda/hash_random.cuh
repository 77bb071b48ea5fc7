#pragma once
// Device port of engine/core/hash_random.{h,cc}: the same integer mixing, so HashBits and
// HashUniform are bit-identical to the CPU's. HashNormal uses CUDA's double log, cos and sqrt
// (sqrt is correctly rounded; log and cos are within an ulp of glibc's), so it agrees with the
// CPU to the last bit of a double in almost every case, and after rounding to f32 or bf16.
#include <cstdint>

namespace twinflow::kernels::cuda {

__device__ __forceinline__ uint64_t HashBits(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull;
  for (int round = 0; round < 2; ++round) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
  }
  return z;
}

__device__ __forceinline__ double HashUniform(uint64_t seed, uint64_t index) {
  return static_cast<double>(HashBits(seed, index) >> 11) * 0x1.0p-53;
}

__device__ __forceinline__ double HashNormal(uint64_t seed, uint64_t index) {
  constexpr double kTwoPi = 2.0 * 3.14159265358979323846;
  const double u1 = 1.0 - HashUniform(seed, 2 * index);  // (0, 1]
  const double u2 = HashUniform(seed, 2 * index + 1);
  return sqrt(-2.0 * log(u1)) * cos(kTwoPi * u2);
}

}  // namespace twinflow::kernels::cuda
