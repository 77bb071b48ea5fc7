#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include "engine/core/rng.h"

RC_GTEST_PROP(RngSmoke, UniformIntInRange, (uint64_t seed)) {
  twinflow::Rng rng(seed);
  const int64_t v = rng.UniformInt(-3, 3);
  RC_ASSERT(v >= -3 && v <= 3);
}
