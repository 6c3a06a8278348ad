// The DLRM-dcnv2 registry entry's plans: the closed recipe from the RCP
// table (the reference's rate and epsilon, the smallest RCP batch), every
// closed_dlrm_dcnv2 key logged once with the values the rules check,
// evaluations every twentieth of the epoch logged as fractions of it, the
// demonstration's plan, the full-size tables sharded over 8 ranks of
// 80 GiB, and the refusals (fp16, another optimizer, tables that do not
// fit) as one-line errors.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "benchmarks/dlrm_dcnv2/setup.h"

namespace mlperf::benchmarks::dlrm_dcnv2 {

std::unique_ptr<Benchmark> MakeBenchmark();

namespace {

absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o, int world,
                                                          int64_t memory_bytes = 0) {
  return MakeBenchmark()->Configure(o, world, {.cores = 2, .memory_bytes = memory_bytes});
}

TEST(DlrmPlan, CriteoUsesTheRcpRecipeAndLogsEveryClosedKeyOnce) {
  RunnerOptions o;
  o.benchmark = "dlrm_dcnv2";
  o.data_dir = "/nonexistent-criteo";  // configuring reads no data
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_FALSE(plan.demo);
  EXPECT_EQ(plan.ruleset, "6.0.0");
  EXPECT_EQ(plan.target.value(), 0.80275);
  EXPECT_EQ(plan.required_runs, 10);
  EXPECT_TRUE(plan.rcp_batch_size);
  EXPECT_EQ(plan.global_batch_size, 32768);  // rcps_dlrm_dcnv2.json's smallest
  EXPECT_EQ(plan.eval_samples, 89'137'319);
  EXPECT_EQ(plan.train_samples, 4'195'197'692);
  // 128,027 steps; an evaluation every 6,401 of them, at fractions of the epoch.
  EXPECT_EQ(plan.schedule.steps_through(1), 6401);
  EXPECT_TRUE(plan.schedule.EpochNum(1).is_float());
  EXPECT_NEAR(plan.schedule.EpochNum(1).as_float(), 6401.0 * 32768 / 4'195'197'692, 1e-15);
  EXPECT_EQ(plan.last_epoch(), 20);

  std::map<std::string, json::Value> values;
  std::map<std::string, int> counts;
  for (const auto& [key, value] : (*setup)->Hyperparameters()) {
    ++counts[key];
    values[key] = value;
  }
  for (const char* key :
       {"global_batch_size", "opt_name", "opt_base_learning_rate",
        "opt_adagrad_learning_rate_decay", "opt_weight_decay",
        "opt_adagrad_initial_accumulator_value", "opt_adagrad_epsilon",
        "opt_learning_rate_warmup_steps", "opt_learning_rate_decay_start_step",
        "opt_learning_rate_decay_steps", "gradient_accumulation_steps", "eval_samples"})
    EXPECT_EQ(counts[key], 1) << key;
  EXPECT_EQ(values["opt_name"].as_string(), "adagrad");
  EXPECT_EQ(values["opt_base_learning_rate"].as_float(), 0.004);
  EXPECT_EQ(values["opt_adagrad_epsilon"].as_float(), 1e-8);
}

TEST(DlrmPlan, TheDemonstrationIsASmallMemberOnGeneratedDays) {
  RunnerOptions o;
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_TRUE(plan.demo);
  EXPECT_FALSE(plan.rcp_batch_size);
  // The rules check the reference's evaluation set size: the generated
  // validation samples are tiled to it.
  EXPECT_EQ(plan.eval_samples, 89'137'319);
  EXPECT_EQ(static_cast<const DlrmSetup&>(**setup).TiledTo(), 89'137'319);
  const auto& member = static_cast<const DlrmSetup&>(**setup).member();
  EXPECT_EQ(member.tables(), 26);
  EXPECT_EQ(member.multi_hot, models::DlrmConfig::Reference().multi_hot);
  EXPECT_NE((*setup)->ReadmeSection().find("generated"), std::string::npos);
}

// The reference's tables on 8 ranks of 80 GiB: the five of 40 million rows
// split by rows, the rest whole; every rank fits. On 2 ranks they do not,
// and the refusal names the rank and what takes the memory.
TEST(DlrmPlan, FullSizeTablesAreShardedToFitEightRanksOf80GiB) {
  RunnerOptions full;
  full.data_dir = "/nonexistent-criteo";
  constexpr int64_t k80GiB = int64_t{80} << 30;
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> eight = Configure(full, 8, k80GiB);
  ASSERT_TRUE(eight.ok()) << eight.status();
  const RunPlan& plan = (*eight)->plan();
  EXPECT_EQ(plan.batch_per_rank * 8, plan.global_batch_size);
  const models::DlrmConfig& member = static_cast<const DlrmSetup&>(**eight).member();
  const models::EmbeddingSharding sharding = models::PlanEmbeddingSharding(member.table_rows, 8);
  for (int64_t t = 0; t < sharding.tables(); ++t)
    EXPECT_EQ(sharding.row_wise(t), member.table_rows[t] == 40'000'000) << t;
  int64_t embeddings = 0;
  for (int rank = 0; rank < 8; ++rank) {
    const models::DlrmMemory m = models::Dlrm::PlanMemory(member, plan.batch_per_rank, rank, 8);
    EXPECT_LT(m.total(), k80GiB) << rank;
    embeddings += m.embeddings;
  }
  // 204.2 million rows of 128 floats, twice (the tables and their sums).
  EXPECT_NEAR(static_cast<double>(embeddings), 2.0 * 204'184'588 * 128 * 4, 1e6);

  absl::Status two = Configure(full, 2, k80GiB).status();
  EXPECT_EQ(two.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(two.message().find("rank 0 of 2"), std::string::npos) << two;

  // The demonstration on 8 processes shards its small tables the same way.
  RunnerOptions demo;
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> small = Configure(demo, 8);
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(static_cast<const DlrmSetup&>(**small).member().row_wise_tables,
            (std::vector<int64_t>{0, 9, 19, 20, 21}));
}

TEST(DlrmPlan, RefusalsAreUsageErrors) {
  RunnerOptions o;
  o.precision = "fp16";
  EXPECT_EQ(Configure(o, 1).status().code(), absl::StatusCode::kInvalidArgument);
  o.precision = "fp32";
  o.optimizer = "sgd";
  EXPECT_EQ(Configure(o, 1).status().code(), absl::StatusCode::kInvalidArgument);
  // The reference's tables (204 million rows of 128 floats, twice) on 64 GiB.
  RunnerOptions full;
  full.data_dir = "/nonexistent-criteo";
  absl::Status s = Configure(full, 1, int64_t{64} << 30).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("GiB"), std::string::npos) << s;
}

}  // namespace
}  // namespace mlperf::benchmarks::dlrm_dcnv2
