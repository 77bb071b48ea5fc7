#pragma once
// Counter-based random numbers: a value depends only on (seed, index). Variable
// initialisation and dropout use them with the logical element index, so every layout of a
// tensor, on any number of devices, sees the same numbers as one device would.
#include <cstdint>

namespace twinflow {

uint64_t HashBits(uint64_t seed, uint64_t index);
double HashUniform(uint64_t seed, uint64_t index);  // [0, 1)
double HashNormal(uint64_t seed, uint64_t index);   // standard normal

}  // namespace twinflow
