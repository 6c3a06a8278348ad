#include "checker/package/benchmark_score.h"
#include "checker/package/run_score.h"
#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

std::string Line(const std::string& key, double time_ms) {
  return ":::MLLOG {\"namespace\": \"\", \"time_ms\": " +
         std::to_string(static_cast<int64_t>(time_ms)) +
         ", \"event_type\": \"INTERVAL_END\", \"key\": \"" + key +
         "\", \"value\": null, \"metadata\": {}}\n";
}

TEST(RunMinutes, StopMinusStartInMinutes) {
  const mllog::ParsedLog log =
      mllog::ParseText(Line("run_start", 1000) + Line("run_stop", 817057), "r");
  absl::StatusOr<double> m = RunMinutes(log);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (817057.0 - 1000.0) / 60 / 1000);
}

TEST(RunMinutes, LaterRunStartBeforeStopWinsAndMissingMarkersFail) {
  const mllog::ParsedLog log = mllog::ParseText(
      Line("run_start", 0) + Line("run_start", 60000) + Line("run_stop", 120000), "r");
  EXPECT_EQ(*RunMinutes(log), 1.0);
  EXPECT_FALSE(RunMinutes(mllog::ParseText(Line("run_start", 0), "r")).ok());
  EXPECT_FALSE(RunMinutes(mllog::ParseText(Line("run_stop", 0), "r")).ok());
  // A stop before the start is no time to train (the summarizer would score it).
  const absl::StatusOr<double> negative =
      RunMinutes(mllog::ParseText(Line("run_start", 60000) + Line("run_stop", 0), "r"));
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(
      negative.status().message(),
      "run_stop is logged 1.000 minutes before run_start: a time to train cannot be negative");
}

TEST(ScoreBenchmark, NonCompliantRunsAreDroppedAndScaled) {
  std::vector<RunTime> runs = {
      {"a", true, 10}, {"b", true, 12}, {"c", false, 9}, {"d", true, 11}, {"e", true, 13}};
  const BenchmarkScore s = ScoreBenchmark("resnet", runs, 1.5);
  EXPECT_EQ(s.dropped_runs, 1);
  ASSERT_TRUE(s.olympic_mean);
  EXPECT_EQ(*s.olympic_mean, (11 + 12 + 13) / 3.0);
  EXPECT_EQ(*s.score, *s.olympic_mean * 1.5);
  runs[0].compliant = false;
  EXPECT_FALSE(ScoreBenchmark("resnet", runs, 1.0).score);
  EXPECT_TRUE(ScoreBenchmark("unet3d", runs, 1.0).olympic_mean.has_value() ==
              false);  // 3 runs left, 4 dropped
}

TEST(SummarizerScalingFactor, PackageCheckerRewritesOnlyWhenItCompared) {
  RcpVerdict faster{.passed = true, .compared = true, .scaling_factor_written = 1.02};
  RcpVerdict slower{.passed = true, .compared = true};
  RcpVerdict stopped{.message = "Insufficient convergence"};
  const absl::StatusOr<RcpVerdict> f = faster, s = slower, x = stopped;
  const auto after = ScalingSource::kAfterPackageChecker;
  EXPECT_EQ(SummarizerScalingFactor(after, 1.5, &f), 1.02);
  EXPECT_EQ(SummarizerScalingFactor(after, 1.5, &s), 1.0);       // stale file deleted
  EXPECT_EQ(SummarizerScalingFactor(after, 1.5, &x), 1.5);       // left alone
  EXPECT_EQ(SummarizerScalingFactor(after, 1.5, nullptr), 1.5);  // no RCP check (open division)
  EXPECT_EQ(SummarizerScalingFactor(ScalingSource::kExistingFile, std::nullopt, &f), 1.0);
}

TEST(ParseScalingJson, ReadsTheFactor) {
  EXPECT_EQ(*ParseScalingJson("{\"scaling_factor\": 1.0042232277526395}", "s"), 1.0042232277526395);
  EXPECT_FALSE(ParseScalingJson("{\"factor\": 1}", "s").ok());
  EXPECT_FALSE(ParseScalingJson("{", "s").ok());
}

}  // namespace
}  // namespace mlperf::package
