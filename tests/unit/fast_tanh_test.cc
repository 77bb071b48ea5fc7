#include "kernels/cpu/fast_tanh.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace twinflow::kernels {
namespace {

TEST(FastTanh, WithinThreeTenMillionthsOfTanhEverywhere) {
  double worst = 0;
  // Every 97th float bit pattern from 0 to +inf, and its negative.
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += 97) {
    const float u = std::bit_cast<float>(bits);
    for (const float v : {u, -u}) {
      const double err = std::abs(static_cast<double>(FastTanh(v)) - std::tanh(double{v}));
      worst = std::max(worst, err);
    }
  }
  EXPECT_LT(worst, 3e-7);
}

TEST(FastTanh, KeepsSignsLimitsAndNan) {
  EXPECT_EQ(FastTanh(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(FastTanh(-0.0f)));
  EXPECT_EQ(FastTanh(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_EQ(FastTanh(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_EQ(FastTanh(100.0f), 1.0f);
  EXPECT_TRUE(std::isnan(FastTanh(std::numeric_limits<float>::quiet_NaN())));
  for (float u = -5; u <= 5; u += 0.25f) EXPECT_EQ(FastTanh(-u), -FastTanh(u));
}

TEST(FastTanh, ExpMatchesWithinFloatPrecision) {
  for (float x = -87; x <= 0; x += 0.013f) {
    EXPECT_NEAR(ExpNonPositive(x) / std::exp(double{x}), 1.0, 3e-7) << x;
  }
}

}  // namespace
}  // namespace twinflow::kernels
