// The quality targets run_closed stops on, read from the rule files the
// checker verifies: their direction, their bounds, the ruleset a benchmark
// follows by default, and what is refused.
#include "quality_targets/quality_target.h"

#include <gtest/gtest.h>

namespace mlperf::quality {
namespace {

TEST(QualityTarget, ReadsEveryBoundAndTheDirection) {
  absl::StatusOr<QualityTarget> resnet = ReadQualityTarget("4.0.0", "resnet");
  ASSERT_TRUE(resnet.ok()) << resnet.status();
  EXPECT_TRUE(resnet->higher_is_better());
  EXPECT_EQ(resnet->value(), 0.759);
  EXPECT_TRUE(resnet->Reached(0.759));
  EXPECT_FALSE(resnet->Reached(0.7589));
  EXPECT_FALSE(resnet->Reached(1.0));  // v < 1.0, as the checker wants
  EXPECT_EQ(resnet->Describe(), "0.759");

  absl::StatusOr<QualityTarget> llama = ReadQualityTarget("6.0.0", "llama31_8b");
  ASSERT_TRUE(llama.ok()) << llama.status();
  EXPECT_EQ(llama->direction(), Direction::kLowerIsBetter);
  EXPECT_EQ(llama->value(), 3.3);
  EXPECT_TRUE(llama->Reached(3.3));
  EXPECT_FALSE(llama->Reached(3.31));
  EXPECT_FALSE(llama->Reached(0.0));  // v > 0.0
  EXPECT_EQ(llama->Describe(), "<= 3.3");

  absl::StatusOr<QualityTarget> unet = ReadQualityTarget("4.0.0", "unet3d");
  ASSERT_TRUE(unet.ok());
  EXPECT_TRUE(unet->Reached(0.95));
  EXPECT_FALSE(unet->Reached(0.9));
}

TEST(QualityTarget, RefusesWhatIsNotBoundsOnTheMetric) {
  for (const char* expression : {"v['BBOX'] >= 0.377 and v['BBOX'] < 1.0", "v > s.target_accuracy",
                                 "", "v >= ", "w >= 1", "v == 1"}) {
    EXPECT_FALSE(QualityTarget::Parse(expression).ok()) << expression;
  }
  absl::StatusOr<QualityTarget> parenthesised = QualityTarget::Parse("(v >= 0.5) and (v < 1.0)");
  ASSERT_TRUE(parenthesised.ok());
  EXPECT_TRUE(parenthesised->Reached(0.5));
  EXPECT_FALSE(ReadQualityTarget("4.0.0", "llama31_8b").ok());  // no such rules
  EXPECT_FALSE(ReadQualityTarget("4.0.0", "maskrcnn").ok());
  EXPECT_FALSE(QualityTarget().Reached(1.0));
}

// The newest round whose benchmark list holds it, and that has its rules.
TEST(QualityTarget, TheNewestRulesetAcceptingABenchmark) {
  EXPECT_EQ(NewestRulesetFor("resnet").value_or(""), "4.0.0");
  EXPECT_EQ(NewestRulesetFor("unet3d").value_or(""), "4.0.0");
  EXPECT_EQ(NewestRulesetFor("bert").value_or(""), "5.0.0");
  EXPECT_FALSE(NewestRulesetFor("toy").ok());
  EXPECT_TRUE(RulesetAccepts("3.0.0", "resnet"));
  EXPECT_FALSE(RulesetAccepts("5.0.0", "resnet"));
  EXPECT_FALSE(RulesetAccepts("9.9.9", "resnet"));
}

}  // namespace
}  // namespace mlperf::quality
