#include "reference/core/init.h"

#include <algorithm>
#include <cmath>

#include "reference/core/philox.h"

namespace mlperf::core {
namespace {

// Normal number i of stream (seed, offset): lanes (0,1) and (2,3) of a block
// are the two uniforms of one Box-Muller pair, whose cosine goes to the even
// element and sine to the odd one. `attempt` (re-draws of the truncated
// normal) goes into the top byte of the block counter, so re-draws never
// reuse numbers of another element or tensor.
struct Polar {
  double r, theta;
};

Polar BoxMuller(const Philox4x32& b, int pair) {
  // 1 - u lies in (0, 1], so the log is finite.
  const double u1 = 1.0 - UniformFromBits(b.v[2 * pair]);
  const double u2 = UniformFromBits(b.v[2 * pair + 1]);
  return {std::sqrt(-2.0 * std::log(u1)), 2.0 * M_PI * u2};
}

float PhiloxNormal(uint64_t seed, uint64_t offset, uint64_t i, uint64_t attempt) {
  const Polar p =
      BoxMuller(PhiloxBlock(seed, offset, i / 4 + (attempt << 56)), static_cast<int>(i % 4) / 2);
  return static_cast<float>(i % 2 == 0 ? p.r * std::cos(p.theta) : p.r * std::sin(p.theta));
}

// Normal numbers 4q to 4q + 3 (first draws): one block and two logarithms
// for the four, the values PhiloxNormal gives one at a time.
void NormalQuad(uint64_t seed, uint64_t offset, uint64_t q, float z[4]) {
  const Philox4x32 b = PhiloxBlock(seed, offset, q);
  for (int pair = 0; pair < 2; ++pair) {
    const Polar p = BoxMuller(b, pair);
    z[2 * pair] = static_cast<float>(p.r * std::cos(p.theta));
    z[2 * pair + 1] = static_cast<float>(p.r * std::sin(p.theta));
  }
}

// Calls body(q, i0, i1) for the quads of elements [4q, min(4q + 4, n)),
// shared by the OpenMP threads: every element's value depends only on its
// index, so the bits do not depend on the thread count. (A 336M-parameter
// model took half a minute to initialise on one core.)
template <typename Body>
void ForQuads(int64_t n, Body body) {
  const int64_t quads = (n + 3) / 4;
#pragma omp parallel for schedule(static) if (n >= (int64_t{1} << 16))
  for (int64_t q = 0; q < quads; ++q) body(static_cast<uint64_t>(q), 4 * q, std::min(n, 4 * q + 4));
}

}  // namespace

void FillConstant(const Tensor& t, float value) {
  float* p = t.f32();
  ForQuads(t.numel(), [&](uint64_t, int64_t i0, int64_t i1) { std::fill(p + i0, p + i1, value); });
}

void FillUniform(const Tensor& t, float lo, float hi, RngStream rng, int64_t first) {
  float* p = t.f32();
  const int64_t n = t.numel(), skip = first % 4;
  // Quads of the stream from the one holding element `first`.
  ForQuads(n + skip, [&](uint64_t q, int64_t i0, int64_t i1) {
    const Philox4x32 b = PhiloxBlock(rng.seed, rng.offset, static_cast<uint64_t>(first / 4) + q);
    for (int64_t i = std::max(i0, skip); i < i1; ++i)
      p[i - skip] = lo + (hi - lo) * UniformFromBits(b.v[i - i0]);
  });
}

void FillNormal(const Tensor& t, float mean, float stddev, RngStream rng) {
  float* p = t.f32();
  ForQuads(t.numel(), [&](uint64_t q, int64_t i0, int64_t i1) {
    float z[4];
    NormalQuad(rng.seed, rng.offset, q, z);
    for (int64_t i = i0; i < i1; ++i) p[i] = mean + stddev * z[i - i0];
  });
}

void FillTruncatedNormal(const Tensor& t, float stddev, RngStream rng) {
  float* p = t.f32();
  ForQuads(t.numel(), [&](uint64_t q, int64_t i0, int64_t i1) {
    float z[4];
    NormalQuad(rng.seed, rng.offset, q, z);
    for (int64_t i = i0; i < i1; ++i) {
      float v = z[i - i0];
      // The chance of 64 rejections in a row is 0.0455^64, so the loop always ends.
      for (uint64_t k = 1; k < 64 && std::fabs(v) > 2.0f; ++k)
        v = PhiloxNormal(rng.seed, rng.offset, static_cast<uint64_t>(i), k);
      p[i] = stddev * v;
    }
  });
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
