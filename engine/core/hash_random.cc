#include "engine/core/hash_random.h"

#include "engine/core/hash_mix.h"

namespace twinflow {

uint64_t HashBits(uint64_t seed, uint64_t index) { return hash_mix::Bits(seed, index); }
double HashUniform(uint64_t seed, uint64_t index) { return hash_mix::Uniform(seed, index); }
double HashNormal(uint64_t seed, uint64_t index) { return hash_mix::Normal(seed, index); }

}  // namespace twinflow
