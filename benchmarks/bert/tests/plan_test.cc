// The BERT registry entry's plans: the evaluation interval formula, the
// closed recipes from the RCP table at each scale, every closed_bert key
// logged once, evaluations at step boundaries past each interval, the
// starting checkpoint found under --data (or a one-line usage error),
// gradient accumulation on a CPU's memory, and the labelled demonstration.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "benchmarks/bert/setup.h"
#include "fmt/format.h"

namespace mlperf::benchmarks::bert {

std::unique_ptr<Benchmark> MakeBenchmark();

namespace {

namespace fs = std::filesystem;

absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o, int world,
                                                          int64_t memory_bytes = 0) {
  return MakeBenchmark()->Configure(o, world, {.cores = 2, .memory_bytes = memory_bytes});
}

const Recipe& RecipeOf(const BenchmarkSetup& setup) {
  return static_cast<const BertSetup&>(setup).recipe();
}

// A --data folder holding (an empty stand-in for) the starting checkpoint.
fs::path DataWithCheckpoint(const std::string& sub) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("bert_plan_{}", getpid());
  fs::create_directories(dir / sub);
  std::ofstream(dir / sub / "model.ckpt-28252.index") << "";
  return dir;
}

TEST(BertPlan, EvaluationIntervalFollowsTheRulesFormula) {
  // references.md 4.5: 150,000 for 256-2048, 175,000 for 3072-4096, 225,000 for 8192.
  for (int64_t gbs : {256, 448, 768, 1536, 2048}) EXPECT_EQ(EvalIntervalSamples(gbs), 150'000);
  for (int64_t gbs : {3072, 4096}) EXPECT_EQ(EvalIntervalSamples(gbs), 175'000);
  EXPECT_EQ(EvalIntervalSamples(8192), 225'000);
}

TEST(BertPlan, WikipediaScalesUseTheRcpRecipesAndLogEveryClosedKeyOnce) {
  const fs::path data = DataWithCheckpoint("phase1");
  RunnerOptions o;
  o.data_dir = data.string();
  o.benchmark = "bert";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_FALSE(plan.demo);
  EXPECT_TRUE(plan.rcp_batch_size);
  // BERT's last round (5.0) and rcps_bert.json at batch 256.
  EXPECT_EQ(plan.ruleset, "5.0.0");
  EXPECT_EQ(plan.target.value(), 0.72);
  EXPECT_EQ(plan.required_runs, 10);
  EXPECT_EQ(plan.global_batch_size, 256);
  const Recipe& t = RecipeOf(**setup);
  EXPECT_EQ(t.base_lr, 3.5e-4);
  EXPECT_EQ(t.train_steps, 13'700);
  EXPECT_EQ(plan.eval_samples, 10'000);
  EXPECT_EQ(plan.train_samples, 0);  // the shards decide
  // Evaluations at the first step boundary at or past each 150,000 samples.
  EXPECT_EQ(plan.schedule.steps_through(1), 586);  // ceil(150000 / 256)
  EXPECT_EQ(plan.schedule.logged(1), 150'016);
  EXPECT_EQ(plan.schedule.steps_through(2), 1172);  // ceil(300000 / 256)
  EXPECT_EQ(plan.schedule.logged(2), 300'032);
  EXPECT_EQ(plan.schedule.steps_in(3), 586);
  EXPECT_TRUE(plan.schedule.is_eval_epoch(1));
  // The run ends once the learning rate has reached 0 (13,700 steps).
  EXPECT_GE(plan.schedule.steps_through(plan.last_epoch()), 13'700);
  EXPECT_LT(plan.schedule.steps_through(plan.last_epoch() - 1), 13'700);

  std::map<std::string, int> counts;
  for (const auto& [key, value] : (*setup)->Hyperparameters()) ++counts[key];
  for (const char* key :
       {"global_batch_size", "opt_base_learning_rate", "opt_lamb_epsilon",
        "opt_learning_rate_training_steps", "opt_learning_rate_warmup_steps", "num_warmup_steps",
        "start_warmup_step", "opt_lamb_beta_1", "opt_lamb_beta_2", "opt_lamb_weight_decay_rate"})
    EXPECT_EQ(counts[key], 1) << key;

  // Three processes: 1536 is the smallest RCP batch that splits.
  setup = Configure(o, 3);
  ASSERT_TRUE(setup.ok()) << setup.status();
  EXPECT_EQ((*setup)->plan().global_batch_size, 1536);
  EXPECT_EQ(RecipeOf(**setup).beta1, 0.66);
  fs::remove_all(data);
}

TEST(BertPlan, AMissingCheckpointIsAUsageErrorNamingIt) {
  const fs::path data = fs::temp_directory_path() / fmt::format("bert_plan_empty_{}", getpid());
  fs::create_directories(data);
  RunnerOptions o;
  o.data_dir = data.string();
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(setup.status().message().find("model.ckpt-28252.index"), std::string::npos);
  fs::remove_all(data);
}

TEST(BertPlan, BertLargeOnACpuAccumulatesMicroBatches) {
  const fs::path data = DataWithCheckpoint("");
  RunnerOptions o;
  o.data_dir = data.string();
  constexpr int64_t kGiB = int64_t{1} << 30;
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1, 24 * kGiB);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_EQ(plan.global_batch_size, 256);
  EXPECT_GT(plan.gradient_accumulation_steps, 1);
  EXPECT_EQ(plan.batch_per_rank * plan.gradient_accumulation_steps, 256);
  // Not even one sample fits in 2 GiB: a one-line error.
  EXPECT_FALSE(Configure(o, 1, 2 * kGiB).ok());
  fs::remove_all(data);
}

TEST(BertPlan, TheDemonstrationIsLabelledAndStartsFromItsGeneratedCheckpoint) {
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure({}, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_TRUE(plan.demo);
  EXPECT_FALSE(plan.rcp_batch_size);
  EXPECT_NE(plan.system_name.find("demo"), std::string::npos);
  EXPECT_NE((*setup)->ReadmeSection().find("not Wikipedia"), std::string::npos);
  EXPECT_GT(plan.train_samples, 0);
  EXPECT_GT(plan.schedule.interval_samples, 0);
  EXPECT_GE(plan.last_epoch(), 2);
}

}  // namespace
}  // namespace mlperf::benchmarks::bert
