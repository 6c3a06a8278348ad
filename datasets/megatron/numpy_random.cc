#include "datasets/megatron/numpy_random.h"

namespace mlperf::megatron {

namespace {
constexpr int kN = 624, kM = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu, kUpper = 0x80000000u, kLower = 0x7fffffffu;
}  // namespace

NumpyRandomState::NumpyRandomState(uint32_t seed) {
  // Matsumoto and Nishimura's init_genrand, which RandomState(int) uses.
  for (int i = 0; i < kN; ++i) {
    key_[i] = seed;
    seed = 1812433253u * (seed ^ (seed >> 30)) + static_cast<uint32_t>(i) + 1u;
  }
  position_ = kN;
}

void NumpyRandomState::Refill() {
  for (int i = 0; i < kN; ++i) {
    const uint32_t y = (key_[i] & kUpper) | (key_[(i + 1) % kN] & kLower);
    key_[i] = key_[(i + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? kMatrixA : 0u);
  }
  position_ = 0;
}

uint32_t NumpyRandomState::NextUint32() {
  if (position_ == kN) Refill();
  uint32_t y = key_[position_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint64_t NumpyRandomState::NextUint64() {
  const uint64_t high = NextUint32();
  return (high << 32) | NextUint32();
}

uint64_t NumpyRandomState::Interval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  uint64_t value;
  if (max <= 0xffffffffu) {
    do value = NextUint32() & mask;
    while (value > max);
  } else {
    do value = NextUint64() & mask;
    while (value > max);
  }
  return value;
}

}  // namespace mlperf::megatron
