#include "engine/core/hash_random.h"

#include <cmath>

namespace twinflow {

uint64_t HashBits(uint64_t seed, uint64_t index) {
  // Two rounds of the SplitMix64 finaliser over a (seed, index) mix.
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + index * 0xD1B54A32D192ED03ull + 0x8CB92BA72F3D8DD7ull;
  for (int round = 0; round < 2; ++round) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
  }
  return z;
}

double HashUniform(uint64_t seed, uint64_t index) {
  return static_cast<double>(HashBits(seed, index) >> 11) * 0x1.0p-53;
}

double HashNormal(uint64_t seed, uint64_t index) {
  const double u1 = 1.0 - HashUniform(seed, 2 * index);  // (0, 1]
  const double u2 = HashUniform(seed, 2 * index + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace twinflow
