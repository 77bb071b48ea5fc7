#pragma once
// Rng: a small, explicitly seeded generator (SplitMix64). Unlike std:: distributions its
// output is identical on every platform and standard library, which determinism requires.
#include <cstdint>

namespace twinflow {

class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}

  uint64_t NextU64();
  double Uniform();                            // [0, 1)
  double Uniform(double lo, double hi);        // [lo, hi)
  int64_t UniformInt(int64_t lo, int64_t hi);  // [lo, hi], inclusive
  double Normal();                             // standard normal (Box-Muller)
  Rng Fork(uint64_t stream);                   // an independent generator for a sub-task

 private:
  uint64_t state_;
};

}  // namespace twinflow
