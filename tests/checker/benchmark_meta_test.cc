// quality_targets/benchmarks.json as the checker and run_closed read it.
#include "quality_targets/benchmark_meta.h"

#include <set>

#include "checker/rule_library.h"
#include "gtest/gtest.h"

namespace mlperf::meta {
namespace {

TEST(BenchmarkMetaTest, ReadsWhatTheOfficialToolsHardCode) {
  const BenchmarkMeta* unet = FindBenchmark("unet3d");
  ASSERT_NE(unet, nullptr);
  EXPECT_EQ(unet->result_files, 40);
  EXPECT_EQ(unet->rcp_runs, 40);
  EXPECT_EQ(unet->olympic_drop_per_side, 4);
  EXPECT_EQ(OlympicDropPerSide("resnet"), 1);
  EXPECT_EQ(ResultFiles("minigo"), 10);
  EXPECT_EQ(RcpRuns("minigo"), std::nullopt);
  EXPECT_FALSE(FindBenchmark("minigo")->rcp_checked);
  EXPECT_EQ(FindBenchmark("nonesuch"), nullptr);
  EXPECT_EQ(OlympicDropPerSide("nonesuch"), 1);
  EXPECT_EQ(FindBenchmark("bert")->converged_at, ConvergedAt::kEpochNumOrTrainSamples);
  EXPECT_EQ(FindBenchmark("dlrmv4")->converged_at, ConvergedAt::kEvalSamplesCount);
  EXPECT_EQ(FindBenchmark("resnet")->converged_at, ConvergedAt::kEpochNum);
}

TEST(BenchmarkMetaTest, StableDiffusionReadsItsStepKeyPerRuleset) {
  const BenchmarkMeta* sd = FindBenchmark("stable_diffusion");
  ASSERT_NE(sd, nullptr);
  EXPECT_EQ(sd->converged_at, ConvergedAt::kFidAndClip);
  EXPECT_EQ(sd->EvalStepKey("3.1.0"), "step_num");
  EXPECT_EQ(sd->EvalStepKey("4.0.0"), "samples_count");
  EXPECT_DOUBLE_EQ(sd->fid_at_most, 90.0);
  EXPECT_DOUBLE_EQ(sd->clip_at_least, 0.15);
}

TEST(BenchmarkMetaTest, AllowedBenchmarksFallBackToTheShortRuleset) {
  const std::vector<std::string> v61 = AllowedBenchmarks("6.1.0");
  EXPECT_EQ(v61, AllowedBenchmarks("6.1"));
  EXPECT_EQ(v61.back(), "dlrmv4");
  EXPECT_TRUE(AllowedBenchmarks("0.5.0").empty());
  EXPECT_TRUE(AllowedBenchmarks("").empty());
}

TEST(BenchmarkMetaTest, RulesetsCompareNumerically) {
  EXPECT_TRUE(RulesetAtLeast("5.0.0", "5.0.0"));
  EXPECT_TRUE(RulesetAtLeast("5.1", "5.0.0"));
  EXPECT_TRUE(RulesetAtLeast("1.10.0", "1.9.0"));
  EXPECT_FALSE(RulesetAtLeast("4.1.0", "5.0.0"));
  EXPECT_FALSE(RulesetAtLeast("3.1.0", "4.0.0"));
}

// Every benchmark a ruleset's closed rules accept has metadata, and the other
// way round every round with rule files lists its benchmarks.
TEST(BenchmarkMetaTest, EveryRulesetWithRuleFilesHasItsBenchmarks) {
  absl::StatusOr<checker::RuleLibrary> rules = checker::RuleLibrary::Embedded();
  ASSERT_TRUE(rules.ok());
  for (const std::string& ruleset : rules->Rulesets()) {
    const std::vector<std::string> allowed = AllowedBenchmarks(ruleset);
    EXPECT_FALSE(allowed.empty()) << ruleset;
    for (const std::string& b : allowed) EXPECT_NE(FindBenchmark(b), nullptr) << b;
  }
}

TEST(BenchmarkMetaTest, EveryRcpRulesetHasRuleFiles) {
  absl::StatusOr<checker::RuleLibrary> rules = checker::RuleLibrary::Embedded();
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(RcpRulesets().size(), 12u);
  for (const std::string& r : RcpRulesets()) EXPECT_TRUE(rules->HasRuleset(r)) << r;
}

TEST(BenchmarkMetaTest, SystemDescriptionRules) {
  const SystemDescriptionRules& s = SystemDescription();
  EXPECT_EQ(s.required_fields.size(), 33u);
  EXPECT_EQ(std::set<std::string>(s.required_fields.begin(), s.required_fields.end()).size(), 33u);
  EXPECT_EQ(s.status_checked_from, "4.0.0");
  EXPECT_EQ(s.status_values.size(), 4u);
}

}  // namespace
}  // namespace mlperf::meta
