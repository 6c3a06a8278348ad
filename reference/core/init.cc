#include "reference/core/init.h"

#include <cmath>

#include "reference/core/philox.h"

namespace mlperf::core {
namespace {

// Normal number i of stream (seed, offset): lanes (0,1) and (2,3) of a block
// are the two uniforms of one Box-Muller pair.
// `attempt` (re-draws of the truncated normal) goes into the top byte of the
// block counter, so re-draws never reuse numbers of another element or tensor.
float PhiloxNormal(uint64_t seed, uint64_t offset, uint64_t i, uint64_t attempt = 0) {
  const Philox4x32 b = PhiloxBlock(seed, offset, i / 4 + (attempt << 56));
  const int pair = static_cast<int>(i % 4) / 2;
  // 1 - u lies in (0, 1], so the log is finite.
  const double u1 = 1.0 - UniformFromBits(b.v[2 * pair]);
  const double u2 = UniformFromBits(b.v[2 * pair + 1]);
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = 2.0 * M_PI * u2;
  return static_cast<float>((i % 2 == 0) ? r * std::cos(theta) : r * std::sin(theta));
}

}  // namespace

void FillConstant(const Tensor& t, float value) {
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = value;
}

void FillUniform(const Tensor& t, float lo, float hi, RngStream rng) {
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = lo + (hi - lo) * PhiloxUniform(rng.seed, rng.offset, static_cast<uint64_t>(i));
}

void FillNormal(const Tensor& t, float mean, float stddev, RngStream rng) {
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i)
    p[i] = mean + stddev * PhiloxNormal(rng.seed, rng.offset, static_cast<uint64_t>(i));
}

void FillTruncatedNormal(const Tensor& t, float stddev, RngStream rng) {
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) {
    // The chance of 64 rejections in a row is 0.0455^64, so the loop always ends.
    float z = 0.0f;
    for (uint64_t k = 0; k < 64; ++k) {
      z = PhiloxNormal(rng.seed, rng.offset, static_cast<uint64_t>(i), k);
      if (std::fabs(z) <= 2.0f) break;
    }
    p[i] = stddev * z;
  }
}

void HeNormalTruncated(const Tensor& t, int64_t fan_in, RngStream rng) {
  // 0.87962566103423978 is the stddev of a unit normal truncated to [-2, 2].
  const double stddev = std::sqrt(2.0 / static_cast<double>(fan_in)) / 0.87962566103423978;
  FillTruncatedNormal(t, static_cast<float>(stddev), rng);
}

void HeNormal(const Tensor& t, int64_t fan_in, RngStream rng) {
  FillNormal(t, 0.0f, static_cast<float>(std::sqrt(2.0 / static_cast<double>(fan_in))), rng);
}

void TorchDefaultUniform(const Tensor& t, int64_t fan_in, RngStream rng) {
  const float bound = static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
  FillUniform(t, -bound, bound, rng);
}

}  // namespace mlperf::core
