// bf16/fp16 conversions against the compiler's own _Float16 / bit rules,
// the arena, and the Philox generator and initialisers.
#include "reference/core/dtype.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"

namespace mlperf::core {
namespace {

uint16_t CompilerHalfBits(float f) {
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

TEST(DTypeTest, HalfRoundTripsEveryHalfValue) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    const float f = HalfToFloat(static_cast<uint16_t>(bits));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    ASSERT_EQ(FloatToHalf(f), bits) << "bits " << bits;
    const uint16_t half_bits = static_cast<uint16_t>(bits);
    _Float16 h;
    std::memcpy(&h, &half_bits, 2);
    ASSERT_EQ(static_cast<float>(h), f);
  }
}

TEST(DTypeTest, FloatToHalfRoundsLikeTheCompiler) {
  // Random floats over the whole half range (normal, subnormal, overflow).
  for (uint64_t i = 0; i < 200000; ++i) {
    const float mag =
        std::ldexp(PhiloxUniform(1, 0, i) + 0.5f, static_cast<int>(PhiloxBits(2, 0, i) % 48) - 30);
    const float f = (i % 2) ? mag : -mag;
    ASSERT_EQ(FloatToHalf(f), CompilerHalfBits(f)) << f;
  }
  // Ties to even just above 1: 1 + 2^-11 rounds down, 1 + 3*2^-11 up.
  EXPECT_EQ(FloatToHalf(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(FloatToHalf(1.0f + 3 * 0x1p-11f), 0x3c02);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);
}

TEST(DTypeTest, Bfloat16RoundsToNearestEven) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(BitsToFloat(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(FloatToBf16(BitsToFloat(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(FloatToBf16(BitsToFloat(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(FloatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  for (uint32_t bits = 0; bits < 65536; bits += 7) {
    const float f = Bf16ToFloat(static_cast<uint16_t>(bits));
    if (!std::isnan(f)) {
      ASSERT_EQ(FloatToBf16(f), bits);
    }
  }
}

TEST(ArenaTest, MeasuringThenAllocatingGivesAlignedDisjointTensors) {
  Arena measure = Arena::Measuring();
  measure.Allocate({3, 5});
  measure.Allocate({7}, DType::kBF16);
  Arena arena(Device::kCpu, measure.used());
  Tensor a = arena.AllocateZeroed({3, 5});
  Tensor b = arena.Allocate({7}, DType::kBF16);
  EXPECT_EQ(arena.used(), measure.used());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % Arena::kAlignment, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % Arena::kAlignment, 0u);
  EXPECT_GE(static_cast<char*>(b.data()) - static_cast<char*>(a.data()),
            static_cast<std::ptrdiff_t>(a.bytes()));
  EXPECT_EQ(a.f32()[14], 0.0f);
  EXPECT_DEATH(arena.Allocate({1}), "arena exhausted");
}

// Known-answer vectors of the Random123 distribution (kat_vectors,
// philox4x32_10): zero, all-ones and digits-of-pi inputs.
TEST(PhiloxTest, KnownAnswers) {
  Philox4x32 r = Philox4x32_10({{0, 0, 0, 0}}, 0, 0);
  EXPECT_EQ(r.v[0], 0x6627e8d5u);
  EXPECT_EQ(r.v[1], 0xe169c58du);
  EXPECT_EQ(r.v[2], 0xbc57ac4cu);
  EXPECT_EQ(r.v[3], 0x9b00dbd8u);
  r = Philox4x32_10({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu,
                    0xffffffffu);
  EXPECT_EQ(r.v[0], 0x408f276du);
  EXPECT_EQ(r.v[1], 0x41c83b0eu);
  EXPECT_EQ(r.v[2], 0xa20bc7c6u);
  EXPECT_EQ(r.v[3], 0x6d5451fdu);
  r = Philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u,
                    0x299f31d0u);
  EXPECT_EQ(r.v[0], 0xd16cfe09u);
  EXPECT_EQ(r.v[1], 0x94fdccebu);
  EXPECT_EQ(r.v[2], 0x5001e420u);
  EXPECT_EQ(r.v[3], 0x24126ea1u);
}

TEST(PhiloxTest, StreamsAreReproducibleAndDistinct) {
  // A recorded value: the mapping from (seed, stream, index) to the counter
  // and key must never change, or every seeded run changes with it.
  EXPECT_EQ(PhiloxBits(42, 7, 12345), 400424722u);
  EXPECT_NE(PhiloxBits(42, 7, 12345), PhiloxBits(43, 7, 12345));
  EXPECT_NE(PhiloxBits(42, 7, 12345), PhiloxBits(42, 8, 12345));
  double sum = 0.0, sum_sq = 0.0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = PhiloxUniform(3, 0, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
    sum_sq += u * u;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  EXPECT_NEAR(sum_sq / n - 0.25, 1.0 / 12, 0.002);
}

// The initialisers' streams element by element, from their definition: a
// Philox block per four elements, Box-Muller on lanes (0,1) and (2,3) (the
// cosine to the even element), truncated normals re-drawn with the attempt
// in the counter's top byte. The fills compute a block and a logarithm once
// for the elements sharing them, on every core: the same bits, whatever the
// thread count.
float DefinitionNormal(uint64_t seed, uint64_t offset, uint64_t i, uint64_t attempt) {
  const Philox4x32 b = PhiloxBlock(seed, offset, i / 4 + (attempt << 56));
  const int pair = static_cast<int>(i % 4) / 2;
  const double r = std::sqrt(-2.0 * std::log(1.0 - UniformFromBits(b.v[2 * pair])));
  const double theta = 2.0 * M_PI * UniformFromBits(b.v[2 * pair + 1]);
  return static_cast<float>(i % 2 == 0 ? r * std::cos(theta) : r * std::sin(theta));
}

TEST(InitTest, FillsGiveTheirStreamsElementByElementOnAnyThreadCount) {
  for (const int64_t n : {int64_t{1}, int64_t{7}, (int64_t{1} << 17) + 3}) {
    const RngStream rng{.seed = 42, .offset = 9};
    std::vector<float> normal(n), truncated(n), uniform(n);
    for (const int threads : {1, 2}) {
      omp_set_num_threads(threads);
      std::vector<float> got(n);
      const Tensor t(got.data(), {n}, DType::kF32);
      FillNormal(t, 0.5f, 2.0f, rng);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], 0.5f + 2.0f * DefinitionNormal(42, 9, i, 0)) << "normal " << i;
      FillTruncatedNormal(t, 3.0f, rng);
      for (int64_t i = 0; i < n; ++i) {
        float z = DefinitionNormal(42, 9, i, 0);
        for (uint64_t k = 1; k < 64 && std::fabs(z) > 2.0f; ++k) z = DefinitionNormal(42, 9, i, k);
        ASSERT_EQ(got[i], 3.0f * z) << "truncated " << i;
      }
      FillUniform(t, -1.0f, 3.0f, rng);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(got[i], -1.0f + 4.0f * PhiloxUniform(42, 9, i)) << "uniform " << i;
    }
  }
  omp_set_num_threads(omp_get_num_procs());
}

TEST(InitTest, DistributionsMatchTheReferences) {
  std::vector<float> buf(60000);
  Tensor t(buf.data(), {60000}, DType::kF32);
  auto moments = [&](double* mean, double* var, double* max_abs) {
    double s = 0, sq = 0, m = 0;
    for (float v : buf) {
      s += v;
      sq += static_cast<double>(v) * v;
      m = std::max(m, static_cast<double>(std::fabs(v)));
    }
    *mean = s / buf.size();
    *var = sq / buf.size() - *mean * *mean;
    *max_abs = m;
  };
  double mean, var, max_abs;
  // TF he_normal: truncated at 2 sigma, variance 2/fan_in after truncation.
  const int64_t fan_in = 3 * 3 * 64;
  HeNormalTruncated(t, fan_in, {.seed = 1, .offset = 0});
  moments(&mean, &var, &max_abs);
  EXPECT_NEAR(mean, 0.0, 1e-3);
  EXPECT_NEAR(var * fan_in / 2.0, 1.0, 0.03);
  EXPECT_LE(max_abs, 2.0 * std::sqrt(2.0 / fan_in) / 0.87962566103423978 + 1e-6);
  HeNormal(t, fan_in, {.seed = 1, .offset = 1});
  moments(&mean, &var, &max_abs);
  EXPECT_NEAR(var * fan_in / 2.0, 1.0, 0.03);
  EXPECT_GT(max_abs, 3.0 * std::sqrt(2.0 / fan_in));  // not truncated
  // PyTorch default: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), variance bound^2/3.
  TorchDefaultUniform(t, 27, {.seed = 2, .offset = 0});
  moments(&mean, &var, &max_abs);
  EXPECT_LE(max_abs, 1.0 / std::sqrt(27.0));
  EXPECT_NEAR(var * 27.0 * 3.0, 1.0, 0.03);
  // Same seed and offset, same numbers; another offset, other numbers.
  std::vector<float> again(60000);
  TorchDefaultUniform(Tensor(again.data(), {60000}, DType::kF32), 27, {.seed = 2, .offset = 0});
  EXPECT_EQ(buf, again);
  TorchDefaultUniform(Tensor(again.data(), {60000}, DType::kF32), 27, {.seed = 2, .offset = 1});
  EXPECT_NE(buf, again);
}

}  // namespace
}  // namespace mlperf::core
