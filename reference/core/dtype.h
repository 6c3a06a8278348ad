// Element types and the fp32 <-> bf16/fp16 conversions used on the host.
// Conversions round to nearest even, keep NaN a NaN and saturate to Inf the
// way IEEE-754 (and CUDA's __float2half_rn / __float2bfloat16_rn) do.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace mlperf::core {

enum class DType : uint8_t { kF32, kBF16, kF16, kI32, kI64, kU8 };

constexpr size_t DTypeSize(DType t) {
  switch (t) {
    case DType::kF32:
      return 4;
    case DType::kBF16:
      return 2;
    case DType::kF16:
      return 2;
    case DType::kI32:
      return 4;
    case DType::kI64:
      return 8;
    case DType::kU8:
      return 1;
  }
  return 0;
}

// Names as the safetensors header spells them.
std::string_view DTypeName(DType t);
bool DTypeFromName(std::string_view name, DType* out);

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t FloatToBf16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float Bf16ToFloat(uint16_t h) { return BitsToFloat(static_cast<uint32_t>(h) << 16); }

uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);

}  // namespace mlperf::core
