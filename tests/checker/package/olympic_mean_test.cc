#include "checker/package/olympic_mean.h"

#include <cmath>

#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

TEST(OlympicTrim, DropsFromBothEndsAfterSorting) {
  EXPECT_EQ(OlympicTrim({5, 1, 4, 2, 3}, 1), (std::vector<double>{2, 3, 4}));
  EXPECT_TRUE(OlympicTrim({1, 2}, 1).empty());
  // Python's s[4:-3] on one value is empty, not an error.
  EXPECT_TRUE(OlympicTrim({1}, 4).empty());
  EXPECT_TRUE(std::isnan(OlympicMean({1, 2}, 1)));
}

TEST(OlympicMean, UnconvergedRunsAreTrimmedAsSlowest) {
  EXPECT_EQ(OlympicMean({35, 34, 1e9, 36, 35}, 1), (35 + 35 + 36) / 3.0);
}

TEST(OlympicScore, AllCompliantDropsOneEachSide) {
  EXPECT_EQ(OlympicScore({10, 14, 11, 12, 13}, 0, 1), (11 + 12 + 13) / 3.0);
}

TEST(OlympicScore, DroppedRunCountsAsTheSlowest) {
  // Four valid runs and one dropped: only the fastest valid run goes.
  EXPECT_EQ(OlympicScore({10, 11, 12, 13}, 1, 1), (11 + 12 + 13) / 3.0);
}

TEST(OlympicScore, Unet3dKeepsThe32AfterTheFourFastest) {
  std::vector<double> minutes;
  for (int i = 0; i < 38; ++i) minutes.push_back(100 - i);  // two runs dropped
  const std::optional<double> score = OlympicScore(minutes, 2, 4);
  ASSERT_TRUE(score);
  // Sorted: 63..100; drop 63..66 and (4 - 2) slowest (99, 100): 67..98, 32 values.
  EXPECT_DOUBLE_EQ(*score, (67 + 98) / 2.0);
}

TEST(OlympicScore, TooManyDroppedOrNothingLeft) {
  EXPECT_FALSE(OlympicScore({10, 11, 12}, 2, 1));
  EXPECT_FALSE(OlympicScore({10}, 0, 1));
}

}  // namespace
}  // namespace mlperf::package
