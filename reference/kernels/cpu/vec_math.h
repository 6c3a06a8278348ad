// exp(x) in fp32 written with plain arithmetic, so that loops calling it
// vectorise (libm's expf is a call per element unless -ffast-math). Used by
// the softmax, the masked-LM loss and GELU, whose exp dominated their cost.
// Accuracy: within 2 ulp of exp over [-87, 88] (tests/core/vec_math_test.cc).
// Below -87 it returns 0 (exp is subnormal there, and subnormals stall the
// arithmetic that follows, e.g. the masked keys of BERT's attention softmax);
// above 88 it returns exp(88), never inf.
//
// Give ExpF a loop of its own (ExpInPlace) when more arithmetic follows it:
// GCC's jump threading copies what follows for each clamped constant, and the
// vector loop then computes those copies for every lane as well; in GELU one
// was x / (1 + exp(88)), subnormal, whose multiplies stall (3x slower fused).
#pragma once

#include <bit>
#include <cstdint>

namespace mlperf::cpu {

inline float ExpF(float x) {
  const bool underflows = x < -87.0f;
  x = underflows ? -87.0f : x;
  x = x > 88.0f ? 88.0f : x;
  // x = n ln2 + r with |r| <= ln2 / 2; adding and subtracting 1.5 * 2^23
  // rounds to the nearest integer in the default rounding mode.
  constexpr float kLog2e = 1.44269504088896341f, kRound = 12582912.0f;
  const float n = (x * kLog2e + kRound) - kRound;
  // ln2 in two parts: n * kLn2Hi is exact (16 significant bits times |n| < 2^8).
  constexpr float kLn2Hi = 0.693145751953125f, kLn2Lo = 1.428606765330187e-06f;
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  // Taylor terms through r^7: the remainder r^8 / 8! < 6e-9 for |r| <= 0.35.
  float p = 1.0f / 5040;
  p = p * r + 1.0f / 720;
  p = p * r + 1.0f / 120;
  p = p * r + 1.0f / 24;
  p = p * r + 1.0f / 6;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^n from its exponent bits; n is in [-126, 127] after the clamp.
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  return underflows ? 0.0f : p * std::bit_cast<float>(bits);
}

// x[i] = exp(x[i]) for i < n.
inline void ExpInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = ExpF(x[i]);
}

}  // namespace mlperf::cpu
