// The random numbers of one 3D U-Net training sample. Every decision of the
// augmentation pipeline (references.md 3.4) reads its own Philox block, so a
// sample's output is a pure function of (seed, epoch, index): the same on any
// thread and in any order, and no decision shifts the numbers of another.
//
// Counter layout: offset = epoch << 32 | index (the top bit stays clear, so
// these never meet datasets/shuffle.h's kShuffleStream); block = decision << 48
// | element.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/check.h"
#include "reference/core/philox.h"

namespace mlperf::kits19 {

// One Philox block stream per decision, in the reference's order of draws.
enum class Decision : uint64_t {
  kOversample = 1,  // foreground crop or uniform crop
  kClass,           // which label value the foreground crop centres on
  kComponent,       // which of the (up to) two largest components
  kCropAxis0,       // per-axis start (uniform) or slack split (foreground): axes 0..2
  kCropAxis1,
  kCropAxis2,
  kFlipAxis0,  // per-axis flip: axes 0..2
  kFlipAxis1,
  kFlipAxis2,
  kBrightness,        // apply brightness?
  kBrightnessFactor,  // its factor
  kNoise,             // apply noise?
  kNoiseStd,          // its sigma
  kNoiseValues,       // the per-voxel normals, 4 per block
};

class SampleRandom {
 public:
  SampleRandom(uint64_t seed, uint64_t epoch, uint64_t index) : seed_(seed) {
    MLPERF_CHECK_MSG(epoch < (uint64_t{1} << 31) && index < (uint64_t{1} << 32),
                     "epoch must be below 2^31 and the sample index below 2^32");
    offset_ = epoch << 32 | index;
  }

  // U[0, 1) with 24 bits, as Python's random.random() < p is used.
  float Uniform(Decision d) const { return core::UniformFromBits(Block(d, 0).v[0]); }

  // U[lo, hi) with 53 bits, as np.random.uniform.
  double UniformDouble(Decision d, double lo, double hi) const {
    const uint64_t bits = Bits64(d) >> 11;
    return lo + (hi - lo) * (static_cast<double>(bits) * 0x1p-53);
  }

  // The reference's randrange helper: 0 when n == 0, else uniform in [0, n)
  // by 64-bit multiply-shift (bias below n / 2^64).
  int64_t RandRange(Decision d, int64_t n) const {
    MLPERF_CHECK(n >= 0);
    return static_cast<int64_t>(
        (static_cast<unsigned __int128>(Bits64(d)) * static_cast<uint64_t>(n)) >> 64);
  }

  // Standard normals i .. i + 3 (i a multiple of 4) by Box-Muller on the two
  // lane pairs of one block; float maths, as the image is float32.
  void Normals4(uint64_t i, float out[4]) const {
    const core::Philox4x32 b = Block(Decision::kNoiseValues, i / 4);
    for (int pair = 0; pair < 2; ++pair) {
      // 1 - u lies in (0, 1], so the log is finite.
      const float u1 = 1.0f - core::UniformFromBits(b.v[2 * pair]);
      const float u2 = core::UniformFromBits(b.v[2 * pair + 1]);
      const float r = std::sqrt(-2.0f * std::log(u1));
      const float theta = 6.28318530717958647692f * u2;
      out[2 * pair] = r * std::cos(theta);
      out[2 * pair + 1] = r * std::sin(theta);
    }
  }

 private:
  core::Philox4x32 Block(Decision d, uint64_t element) const {
    return core::PhiloxBlock(seed_, offset_, static_cast<uint64_t>(d) << 48 | element);
  }
  uint64_t Bits64(Decision d) const {
    const core::Philox4x32 b = Block(d, 0);
    return static_cast<uint64_t>(b.v[0]) << 32 | b.v[1];
  }

  uint64_t seed_;
  uint64_t offset_ = 0;
};

// Decision for axis `axis` of a per-axis family (kCropAxis0, kFlipAxis0).
inline Decision AxisDecision(Decision first, int axis) {
  return static_cast<Decision>(static_cast<uint64_t>(first) + static_cast<uint64_t>(axis));
}

}  // namespace mlperf::kits19
