// FastDiv (kernels/fast_div.h) against the hardware division, on the host
// build of the same code the GPU's index arithmetic runs.
#include "reference/kernels/fast_div.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "reference/core/philox.h"

namespace mlperf {
namespace {

// Dividends near the multiples of d and near the limit, and random ones.
std::vector<int64_t> Dividends(int64_t d, uint64_t seed) {
  std::vector<int64_t> n = {0, 1, FastDiv::kLimit - 1, FastDiv::kLimit - 2};
  for (int64_t q :
       {int64_t{1}, int64_t{2}, int64_t{3}, FastDiv::kLimit / d - 1, FastDiv::kLimit / d})
    for (int64_t e = -2; e <= 2; ++e) n.push_back(q * d + e);
  for (uint64_t i = 0; i < 200; ++i)
    n.push_back(static_cast<int64_t>(core::PhiloxBits(seed, d, i) >> 1));
  std::vector<int64_t> valid;
  for (int64_t v : n)
    if (v >= 0 && v < FastDiv::kLimit) valid.push_back(v);
  return valid;
}

TEST(FastDivTest, QuotientsAndRemaindersEqualTheHardwareDivision) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= 4100; ++d) divisors.push_back(d);
  for (int s = 12; s < 31; ++s)
    for (int64_t e = -1; e <= 1; ++e) divisors.push_back((int64_t{1} << s) + e);
  divisors.push_back(FastDiv::kLimit - 1);
  // Index-like divisors: ResNet's and U-Net's planes and channel counts.
  for (int64_t d : {56 * 56 * 64, 112 * 112, 128 * 128 * 128, 7 * 7 * 2048, 3 * 1024 * 512})
    divisors.push_back(d);
  for (uint64_t i = 0; i < 2000; ++i)
    divisors.push_back(1 + static_cast<int64_t>(core::PhiloxBits(3, 0, i) % (FastDiv::kLimit - 1)));
  int64_t checked = 0;
  for (int64_t d : divisors) {
    const FastDiv f(d);
    for (int64_t n : Dividends(d, 5)) {
      ASSERT_EQ(f.Div(n), n / d) << n << " / " << d;
      ASSERT_EQ(f.Mod(n), n % d) << n << " % " << d;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000000);
}

TEST(FastDivTest, WideDivTakesAnyNonNegativeIndex) {
  const WideDiv w(3);
  EXPECT_EQ(w.Div(int64_t{1} << 40), (int64_t{1} << 40) / 3);
  EXPECT_EQ(w.Mod(int64_t{1} << 40), (int64_t{1} << 40) % 3);
}

TEST(FastDivDeathTest, DivisorsOutOfRangeAreRefused) {
  EXPECT_DEATH(FastDiv(0), "");
  EXPECT_DEATH(FastDiv(FastDiv::kLimit), "");
}

}  // namespace
}  // namespace mlperf
