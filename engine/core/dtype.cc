#include "engine/core/dtype.h"

#include <cmath>
#include <cstring>

#include "engine/core/error.h"

namespace twinflow {

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
    case DType::kBF16:
    case DType::kF16:
      return 2;
  }
  return 0;
}

const char* DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return "f32";
    case DType::kF64:
      return "f64";
    case DType::kI32:
      return "i32";
    case DType::kI64:
      return "i64";
    case DType::kBF16:
      return "bf16";
    case DType::kF16:
      return "f16";
  }
  return "?";
}

DType ParseDType(std::string_view text) {
  for (DType d : kAllDTypes) {
    if (text == DTypeName(d)) return d;
  }
  if (text == "float32" || text == "float") return DType::kF32;
  if (text == "float64" || text == "double") return DType::kF64;
  if (text == "int32") return DType::kI32;
  if (text == "int64") return DType::kI64;
  if (text == "bfloat16") return DType::kBF16;
  if (text == "float16" || text == "half") return DType::kF16;
  throw InvalidArgumentError("unknown dtype '" + std::string(text) +
                             "' (expected f32, f64, i32, i64, bf16 or f16)");
}

bool IsFloating(DType dtype) { return dtype != DType::kI32 && dtype != DType::kI64; }
bool IsStorageOnly(DType dtype) { return dtype == DType::kBF16 || dtype == DType::kF16; }

uint16_t FloatToBF16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if (std::isnan(value)) return 0x7FC0;
  const uint32_t rounding = 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

float BF16ToFloat(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, 4);
  return value;
}

uint16_t FloatToF16(float value) {
  uint32_t x;
  std::memcpy(&x, &value, 4);
  const uint32_t sign = (x >> 16) & 0x8000;
  const uint32_t abs = x & 0x7FFFFFFF;
  if (abs > 0x7F800000) return static_cast<uint16_t>(sign | 0x7E00);   // NaN
  if (abs >= 0x477FF000) return static_cast<uint16_t>(sign | 0x7C00);  // overflow to inf
  if (abs < 0x38800000) {                                              // subnormal or zero in f16
    const float magnitude = std::fabs(value);
    const auto scaled = static_cast<uint32_t>(std::nearbyint(magnitude * 16777216.0f));  // 2^24
    return static_cast<uint16_t>(sign | scaled);
  }
  const uint32_t mantissa = abs & 0x007FFFFF;
  uint32_t half = ((abs >> 23) - 112) << 10 | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1FFF;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;  // round to nearest even
  return static_cast<uint16_t>(sign | half);
}

float F16ToFloat(uint16_t bits) {
  const uint32_t sign = (bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1F;
  const uint32_t mantissa = bits & 0x3FF;
  float value;
  if (exponent == 0) {
    value = std::ldexp(static_cast<float>(mantissa), -24);
    return sign ? -value : value;
  }
  uint32_t x = exponent == 31 ? (sign | 0x7F800000 | (mantissa << 13))
                              : (sign | ((exponent + 112) << 23) | (mantissa << 13));
  std::memcpy(&value, &x, 4);
  return value;
}

}  // namespace twinflow
