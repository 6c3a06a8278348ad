#include "reference/core/fp8.h"

#include <algorithm>
#include <cmath>

#include "reference/core/dtype.h"

namespace mlperf::core {
namespace {

// Rounds |f| (finite, not NaN) to the code of a format with kExp exponent
// and kMan mantissa bits, nearest even; the result may pass the format's
// largest code (the caller decides what that becomes).
template <int kExp, int kMan>
uint32_t RoundMagnitude(float a) {
  constexpr int kBias = (1 << (kExp - 1)) - 1;
  constexpr int kMinExponent = 1 - kBias;  // of the smallest normal
  int e;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  const int exponent = std::max(e - 1, kMinExponent);
  // Scaling by a power of two is exact; nearbyint rounds half to even.
  const float steps = std::nearbyint(std::ldexp(a, kMan - exponent));
  if (a == 0.0f || steps == 0.0f) return 0;
  const auto q = static_cast<uint32_t>(steps);                 // in [0, 2^(kMan + 1)]
  if (exponent == kMinExponent && q < (1u << kMan)) return q;  // subnormal
  // q / 2^kMan is the significand; a carry to 2 moves to the next binade.
  const int biased = exponent + kBias + (q >> (kMan + 1));
  const uint32_t mantissa = q >> (q >> (kMan + 1));
  return (static_cast<uint32_t>(biased) << kMan) | (mantissa & ((1u << kMan) - 1));
}

}  // namespace

uint8_t FloatToE4m3(float f, bool saturate) {
  const uint8_t sign = (FloatBits(f) >> 24) & 0x80;
  if (std::isnan(f)) return sign | 0x7f;
  const float a = std::fabs(f);
  // Past 0x7e (448) lies only NaN: E4M3 has no infinities.
  const uint32_t code = std::isinf(a) ? 0x80 : RoundMagnitude<4, 3>(a);
  if (code > 0x7e) return sign | (saturate ? 0x7e : 0x7f);
  return sign | static_cast<uint8_t>(code);
}

uint8_t FloatToE5m2(float f, bool saturate) {
  const uint8_t sign = (FloatBits(f) >> 24) & 0x80;
  if (std::isnan(f)) return sign | 0x7e;
  const float a = std::fabs(f);
  const uint32_t code = std::isinf(a) ? 0x7c : RoundMagnitude<5, 2>(a);
  if (code >= 0x7c) return sign | (saturate ? 0x7b : 0x7c);  // 0x7c: infinity
  return sign | static_cast<uint8_t>(code);
}

float E4m3ToFloat(uint8_t bits) {
  const float sign = bits & 0x80 ? -1.0f : 1.0f;
  const int exponent = (bits >> 3) & 0xf, mantissa = bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::nanf("");
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

float E5m2ToFloat(uint8_t bits) {
  const float sign = bits & 0x80 ? -1.0f : 1.0f;
  const int exponent = (bits >> 2) & 0x1f, mantissa = bits & 0x3;
  if (exponent == 0x1f) return mantissa == 0 ? sign * INFINITY : std::nanf("");
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -16);
  return sign * std::ldexp(static_cast<float>(4 + mantissa), exponent - 17);
}

DelayedScaling::DelayedScaling(float format_max, int history_length, int margin)
    : format_max_(format_max), margin_(margin), history_(std::max(history_length, 1), 0.0f) {}

void DelayedScaling::Record(float amax) {
  history_[next_] = amax;
  next_ = (next_ + 1) % history_.size();
  float most = 0.0f;
  bool finite = true;
  for (const float a : history_) {
    finite = finite && std::isfinite(a);
    most = std::max(most, a);
  }
  if (finite && most > 0.0f) scale_ = std::ldexp(format_max_ / most, -margin_);
}

}  // namespace mlperf::core
