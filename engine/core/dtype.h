#pragma once
// Element types. f32/f64/i32/i64 are computed on; bf16 and f16 are storage types: tensors of
// them can be created, moved and boxed (bytes are bytes), and convert to and from f32.
#include <cstdint>
#include <string>
#include <string_view>

namespace twinflow {

enum class DType : uint8_t { kF32, kF64, kI32, kI64, kBF16, kF16 };

inline constexpr DType kAllDTypes[] = {DType::kF32, DType::kF64,  DType::kI32,
                                       DType::kI64, DType::kBF16, DType::kF16};

int64_t DTypeSize(DType dtype);
const char* DTypeName(DType dtype);       // "f32", "bf16", ...
DType ParseDType(std::string_view text);  // throws InvalidArgumentError naming the text
bool IsFloating(DType dtype);             // f32, f64, bf16, f16
bool IsStorageOnly(DType dtype);          // bf16, f16

// Storage conversions for the 16-bit float types (round to nearest even).
uint16_t FloatToBF16(float value);
float BF16ToFloat(uint16_t bits);
uint16_t FloatToF16(float value);
float F16ToFloat(uint16_t bits);

}  // namespace twinflow
