// Rounding fp32 values to bf16 or fp16 precision in place, for the kernels
// that round their outputs as they write them (the rounding points of
// ops/precision.h, fused where the values are still in cache).
#pragma once

#include <bit>
#include <cstdint>

#include "reference/core/dtype.h"

namespace mlperf::cpu {

// x rounded to bf16 or fp16 precision, kept in fp32: the conversion there
// and back (core/dtype.h) bit for bit (tested), but without branches, so
// that the loops vectorise (the fp16 conversion pair made fp16 runs 4x slower).
inline float RoundToBf16(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  const uint32_t nan = (u | 0x00400000u) & 0xffff0000u;  // quiet, as the conversion
  return std::bit_cast<float>((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

inline float RoundToHalf(float x) {
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t sign = u & 0x80000000u, abs = u & 0x7fffffffu;
  // Normal halves: 10 mantissa bits kept, nearest even (a carry may bump the exponent).
  const uint32_t normal = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
  // Subnormal halves are multiples of 2^-24: x * 2^24 rounded to an integer
  // by adding and subtracting 1.5 * 2^23; the sign put back for zeros.
  const float t = x * 0x1p24f;
  const float sub = ((t + 12582912.0f) - 12582912.0f) * 0x1p-24f;
  const uint32_t subnormal = std::bit_cast<uint32_t>(sub) | sign;
  uint32_t r = abs < 0x38800000u ? subnormal : normal;  // below 2^-14
  r = abs >= 0x477ff000u ? (sign | 0x7f800000u) : r;    // rounds to >= 65520: Inf
  r = abs > 0x7f800000u ? (u | 0x00400000u) : r;        // NaN stays a (quiet) NaN
  return std::bit_cast<float>(r);
}

// x scaled into FP8 and rounded there, kept in fp32: E4M3 (3 mantissa bits,
// normals from 2^-6, largest 448) or E5M2 (2 bits, from 2^-14, largest
// 57344), nearest even, saturating at the largest finite value as FP8
// GEMMs' scaled casts do; NaN stays a NaN. core/fp8.h's conversion
// (saturate = true) and back, bit for bit (tested), branch-free as above.
template <int kMantissa, int kMinExponent, uint32_t kLargestBits>
inline float RoundToFp8Saturated(float x) {
  constexpr int kShift = 23 - kMantissa;
  constexpr uint32_t kMinNormalBits = static_cast<uint32_t>(127 + kMinExponent) << 23;
  // Subnormals are multiples of 2^(kMinExponent - kMantissa), scaled to
  // integers (below 2^kMantissa) and rounded by adding and subtracting 1.5 * 2^23.
  constexpr float kUp = static_cast<float>(1u << (kMantissa - kMinExponent));
  const uint32_t u = std::bit_cast<uint32_t>(x);
  const uint32_t sign = u & 0x80000000u, abs = u & 0x7fffffffu;
  const uint32_t normal =
      (abs + ((1u << (kShift - 1)) - 1) + ((abs >> kShift) & 1u)) & ~((1u << kShift) - 1);
  const float t = std::bit_cast<float>(abs) * kUp;
  const uint32_t subnormal = std::bit_cast<uint32_t>(((t + 12582912.0f) - 12582912.0f) / kUp);
  uint32_t r = abs < kMinNormalBits ? subnormal : normal;
  r = r > kLargestBits ? kLargestBits : r;  // Inf too
  return std::bit_cast<float>(abs > 0x7f800000u ? (u | 0x00400000u) : (r | sign));
}
inline float RoundToE4m3Saturated(float x) { return RoundToFp8Saturated<3, -6, 0x43e00000u>(x); }
inline float RoundToE5m2Saturated(float x) { return RoundToFp8Saturated<2, -14, 0x47600000u>(x); }

// x rounded to bf16, as its bits (bf16 storage), and such bits as fp32:
// branch-free like RoundToBf16, for loops that read and write bf16 tensors.
inline uint16_t Bf16Bits(float x) {
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(RoundToBf16(x)) >> 16);
}
inline float Bf16Value(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// A stored activation's value: fp32 as it is, bf16 bits widened.
inline float StoredValue(float v) { return v; }
inline float StoredValue(uint16_t bits) { return Bf16Value(bits); }

// n fp32 values rounded to bf16, stored as bits.
inline void StoreBf16(const float* src, int64_t n, uint16_t* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Bf16Bits(src[i]);
}

// p[0, n) rounded to `precision` in place; nothing under kF32.
inline void RoundSpan(core::DType precision, float* p, int64_t n) {
  if (precision == core::DType::kBF16) {
    for (int64_t i = 0; i < n; ++i) p[i] = RoundToBf16(p[i]);
  } else if (precision == core::DType::kF16) {
    for (int64_t i = 0; i < n; ++i) p[i] = RoundToHalf(p[i]);
  }
}

}  // namespace mlperf::cpu
