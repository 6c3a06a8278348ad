// cpu::ExpF (kernels/cpu/vec_math.h) against std::exp in fp64.
#include "reference/kernels/cpu/vec_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace mlperf {
namespace {

// |ExpF(x) - exp(x)| in units of the fp32 spacing at exp(x).
double UlpError(float x) {
  const double exact = std::exp(static_cast<double>(x));
  const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(exact)) - 23);
  return std::fabs(cpu::ExpF(x) - exact) / ulp;
}

TEST(ExpFTest, WithinTwoUlpOverTheWholeRange) {
  double worst = 0.0;
  // About a million points spread over [-87, 88], and small arguments of
  // either sign down to 2^-60 (exp near 1, where a relative error shows).
  for (int i = 0; i <= 1 << 20; ++i)
    worst = std::max(worst, UlpError(-87.0f + 175.0f * static_cast<float>(i) / (1 << 20)));
  for (int e = 0; e <= 60; ++e)
    for (int i = 0; i < 256; ++i) {
      const float x = std::ldexp(1.0f + static_cast<float>(i) / 256, -e);
      worst = std::max({worst, UlpError(x), UlpError(-x)});
    }
  EXPECT_LT(worst, 2.0);
  EXPECT_EQ(cpu::ExpF(0.0f), 1.0f);
}

TEST(ExpFTest, FlushesToZeroBelowTheRangeAndSaturatesAbove) {
  EXPECT_EQ(cpu::ExpF(1000.0f), cpu::ExpF(88.0f));
  EXPECT_TRUE(std::isfinite(cpu::ExpF(std::numeric_limits<float>::max())));
  EXPECT_EQ(cpu::ExpF(-87.5f), 0.0f);
  EXPECT_EQ(cpu::ExpF(-10000.0f), 0.0f);  // BERT's padding mask
  EXPECT_GT(cpu::ExpF(-87.0f), 0.0f);
  float x[3] = {-1000.0f, 0.0f, 1.0f};
  cpu::ExpInPlace(x, 3);
  EXPECT_EQ(x[0], 0.0f);
  EXPECT_EQ(x[1], 1.0f);
  EXPECT_NEAR(x[2], std::exp(1.0), 2e-7);
}

}  // namespace
}  // namespace mlperf
