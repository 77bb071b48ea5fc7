// tanh in float without branches or library calls, so that loops calling it vectorise and take
// the same time whatever the data. Absolute error below 3e-7 over all floats (tested).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace twinflow::kernels {

// e^x for x in [-87, 0]: x = k ln2 + r with |r| <= ln2/2, e^r by its Taylor polynomial to r^6
// (relative error ~1.2e-7), 2^k assembled in the exponent bits. Below -87, and for a NaN, it
// is e^-87 (so that the integer conversion of k is always defined).
inline float ExpNonPositive(float x) {
  x = x > -87.0f ? x : -87.0f;
  constexpr float kRound = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float k = (x * 1.44269504f + kRound) - kRound;
  const float r = (x - k * 0.693359375f) - k * -2.12194440e-4f;  // ln2 split in two for accuracy
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const float scale = std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
  return p * scale;
}

// A NaN comes out as itself (a select, so the loop still vectorises).
inline float FastTanh(float u) {
  const float e = ExpNonPositive(-2.0f * std::abs(u));
  const float magnitude = u != u ? u : (1.0f - e) / (1.0f + e);
  const uint32_t sign = std::bit_cast<uint32_t>(u) & 0x80000000u;
  return std::bit_cast<float>(std::bit_cast<uint32_t>(magnitude) | sign);
}

}  // namespace twinflow::kernels
