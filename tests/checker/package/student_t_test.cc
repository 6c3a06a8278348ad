#include "checker/package/student_t.h"

#include <cmath>

#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

struct QuantileCase {
  double p, df, expected;  // expected: scipy.stats.t.ppf(p, df), scipy 1.17.1
};

const QuantileCase kScipy[] = {
    {0.05, 1, -6.313751514675044},      {0.05, 2, -2.9199855803537256},
    {0.05, 12, -1.7822875556493194},    {0.05, 16, -1.7458836762762502},
    {0.05, 18, -1.7340636066175392},    {0.05, 26, -1.7056179197592731},
    {0.05, 116, -1.6580957442687676},   {0.01, 7.5, -2.9430993234067215},
    {0.3, 3, -0.5843897274398188},      {0.45, 50, -0.12630123999765916},
    {0.499, 10, -0.002569981146866868}, {0.95, 20, 1.7247182429207866},
    {1e-08, 4, -131.59473694062356},    {1e-12, 1, -318309886183.7907},
    {0.2, 0.7, -1.7588267314034605},
};

TEST(StudentTQuantile, MatchesScipyPpf) {
  for (const QuantileCase& c : kScipy) {
    EXPECT_NEAR(StudentTQuantile(c.p, c.df), c.expected, 1e-12 * std::fabs(c.expected))
        << "p=" << c.p << " df=" << c.df;
  }
}

TEST(StudentTQuantile, InvertsTheCdf) {
  for (double df : {1.0, 3.0, 16.0, 80.0}) {
    for (double p : {1e-6, 0.05, 0.3, 0.5, 0.8, 0.999}) {
      EXPECT_NEAR(StudentTCdf(StudentTQuantile(p, df), df), p, 1e-13 + 1e-12 * p) << "df=" << df;
    }
  }
}

TEST(StudentTQuantile, EdgesAndSymmetry) {
  EXPECT_EQ(StudentTQuantile(0.5, 7), 0.0);
  EXPECT_TRUE(std::isinf(StudentTQuantile(0.0, 7)) && StudentTQuantile(0.0, 7) < 0);
  EXPECT_TRUE(std::isinf(StudentTQuantile(1.0, 7)) && StudentTQuantile(1.0, 7) > 0);
  EXPECT_TRUE(std::isnan(StudentTQuantile(1.5, 7)));
  EXPECT_DOUBLE_EQ(StudentTQuantile(0.9, 12), -StudentTQuantile(0.1, 12));
}

TEST(StudentTCdf, MatchesScipyCdf) {
  EXPECT_NEAR(StudentTCdf(-1.7, 14), 0.0556147825551873, 1e-15);
  EXPECT_NEAR(StudentTCdf(2.3, 5), 0.9651137653339813, 1e-15);
}

TEST(RegularizedIncompleteBeta, KnownClosedForms) {
  // I_x(1, 1) = x and I_x(a, 1) = x^a.
  EXPECT_NEAR(RegularizedIncompleteBeta(1, 1, 0.37), 0.37, 1e-15);
  EXPECT_NEAR(RegularizedIncompleteBeta(3, 1, 0.5), 0.125, 1e-15);
  EXPECT_NEAR(InverseRegularizedIncompleteBeta(3, 1, 0.125), 0.5, 1e-15);
  EXPECT_EQ(RegularizedIncompleteBeta(2, 3, 0), 0.0);
  EXPECT_EQ(RegularizedIncompleteBeta(2, 3, 1), 1.0);
}

}  // namespace
}  // namespace mlperf::package
