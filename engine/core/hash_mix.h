#pragma once
// The arithmetic of the counter-based random numbers (hash_random.h), in one place for the host
// and for CUDA kernels (kernels/cuda/hash_random.cuh): both must draw the same bits for the
// same (seed, index), so that initial values and dropout masks do not depend on the device.
// Header-only and free of engine types, so nvcc compiles it as device code too.
#include <cmath>
#include <cstdint>

#include "engine/core/host_device.h"

namespace twinflow::hash_mix {

// Two rounds of the SplitMix64 finaliser over a (seed, index) mix.
TWINFLOW_HOST_DEVICE uint64_t Bits(uint64_t seed, uint64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull;
  for (int round = 0; round < 2; ++round) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
  }
  return z;
}

// [0, 1) from the top 53 bits.
TWINFLOW_HOST_DEVICE double Uniform(uint64_t seed, uint64_t index) {
  return static_cast<double>(Bits(seed, index) >> 11) * 0x1.0p-53;
}

// Box-Muller over the uniforms at 2*index and 2*index+1. sqrt, log and cos are glibc's on the
// host and CUDA's on a GPU (sqrt correctly rounded, log and cos within an ulp of glibc's).
TWINFLOW_HOST_DEVICE double Normal(uint64_t seed, uint64_t index) {
  const double u1 = 1.0 - Uniform(seed, 2 * index);  // (0, 1]
  const double u2 = Uniform(seed, 2 * index + 1);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

}  // namespace twinflow::hash_mix
