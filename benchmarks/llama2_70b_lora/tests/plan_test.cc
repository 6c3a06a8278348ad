// The Llama 2 70B LoRA registry entry's plans: the closed recipe from the
// RCP table (batch 8, rate 4e-4, 1024 steps), every closed_llama2_70b_lora
// key logged once with the values the rules check, evaluations every 384
// samples after the reference's delay, the demonstration's plan, the
// memory plan's refusal of the whole 70B model per GPU naming the split
// that fits, and the usage errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "benchmarks/llama2_70b_lora/setup.h"

namespace mlperf::benchmarks::llama2_70b_lora {

std::unique_ptr<Benchmark> MakeBenchmark();

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o, int world,
                                                          int64_t memory_bytes = 0) {
  return MakeBenchmark()->Configure(o, world, {.cores = 2, .memory_bytes = memory_bytes});
}

RunnerOptions GovReport() {
  RunnerOptions o;
  o.benchmark = "llama2_70b_lora";
  o.data_dir = "/nonexistent-govreport";  // configuring reads no data
  o.ruleset = "6.1.0";
  o.flags["base_model"] = "/nonexistent-llama2-70b";
  return o;
}

std::map<std::string, json::Value> Logged(const BenchmarkSetup& setup) {
  std::map<std::string, json::Value> values;
  std::map<std::string, int> counts;
  for (const auto& [key, value] : setup.Hyperparameters()) {
    EXPECT_EQ(++counts[key], 1) << key << " logged twice";
    values[key] = value;
  }
  return values;
}

TEST(LoraPlan, GovReportUsesTheRcpRecipeAndLogsEveryClosedKeyOnce) {
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(GovReport(), 8);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_FALSE(plan.demo);
  EXPECT_EQ(plan.target.value(), 0.925);
  EXPECT_EQ(plan.required_runs, 10);
  EXPECT_TRUE(plan.rcp_batch_size);
  EXPECT_EQ(plan.global_batch_size, 8);  // rcps_llama2_70b_lora.json's smallest
  EXPECT_EQ(plan.batch_per_rank, 1);     // the reference's one sample per device
  const auto& s = static_cast<const LoraSetup&>(**setup);
  EXPECT_EQ(s.recipe().base_lr, 4e-4);
  EXPECT_EQ(s.recipe().training_steps, 1024);
  EXPECT_EQ(s.member().layers, 80);
  EXPECT_EQ(s.member().lora.rank, 16);
  EXPECT_TRUE(s.member().lora_fused_qkv);
  EXPECT_TRUE(s.member().sample_mean_loss);
  EXPECT_EQ(s.base(), "/nonexistent-llama2-70b");
  // Evaluations every 384 samples, the first past int(0.125 x 8 + 2) = 3
  // intervals: at 1536 samples (step 192), as the reference's eval_delay;
  // the last within its 1024 steps.
  EXPECT_TRUE(plan.schedule.samples_count);
  EXPECT_EQ(plan.schedule.steps_through(1), 48);
  EXPECT_FALSE(plan.schedule.is_eval_epoch(3));
  EXPECT_TRUE(plan.schedule.is_eval_epoch(4));
  EXPECT_EQ(plan.schedule.At(4)[0].second.as_int(), 1536);
  EXPECT_LE(plan.schedule.steps_through(plan.last_epoch()), 1024);
  EXPECT_GT(plan.schedule.steps_through(plan.last_epoch() + 1), 1024);

  std::map<std::string, json::Value> v = Logged(**setup);
  EXPECT_EQ(v["lora_rank"].as_int(), 16);
  EXPECT_EQ(v["lora_alpha"].as_int(), 32);
  EXPECT_EQ(v["global_batch_size"].as_int(), 8);
  EXPECT_EQ(v["train_samples"].as_int(), 3901);
  EXPECT_EQ(v["eval_samples"].as_int(), 173);
  EXPECT_EQ(v["opt_base_learning_rate"].as_float(), 4e-4);
  EXPECT_EQ(v["opt_learning_rate_training_steps"].as_int(), 1024);
  EXPECT_EQ(v["opt_adamw_weight_decay"].as_float(), 1e-4);
  EXPECT_EQ(v["opt_gradient_clip_norm"].as_float(), 0.3);
  EXPECT_EQ(v["opt_learning_rate_warmup_factor"].as_float(), 0.0);
  EXPECT_EQ(v["gradient_accumulation_steps"].as_int(), 1);
}

TEST(LoraPlan, GovReportNeedsTheBaseCheckpoint) {
  RunnerOptions o = GovReport();
  o.flags.erase("base_model");
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 8);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(setup.status().message().find("--base_model"), std::string::npos);
}

// The memory plan on 8 processes of 80 GiB (a GPU's memory is read from
// the device; the same plan applies to a process's share of the host),
// printed: the whole 70B base on each is refused naming the split that
// fits, which then configures.
TEST(LoraPlan, TheWholeModelPerGpuIsRefusedNamingTheSplitThatFits) {
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> whole = Configure(GovReport(), 8, 80 * kGiB);
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.status().code(), absl::StatusCode::kResourceExhausted);
  const std::string message(whole.status().message());
  std::printf("%s\n", message.c_str());
  EXPECT_NE(message.find("llama2_70b_lora needs"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos);
  const size_t at = message.find("pass --tensor_parallel ");
  ASSERT_NE(at, std::string::npos) << message;
  RunnerOptions o = GovReport();
  o.tensor_parallel = std::stoi(message.substr(at + std::string("pass --tensor_parallel ").size()));
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> split = Configure(o, 8, 80 * kGiB);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_EQ((*split)->plan().processes(), 8);
  std::printf("fits: tensor parallel %d, recomputing %d\n", o.tensor_parallel,
              static_cast<const LoraSetup&>(**split).member().recompute ? 1 : 0);
}

TEST(LoraPlan, TheDemonstrationIsASmallMemberOnAGeneratedTask) {
  RunnerOptions o;
  o.benchmark = "llama2_70b_lora";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_TRUE(plan.demo);
  EXPECT_FALSE(plan.rcp_batch_size);
  const auto& s = static_cast<const LoraSetup&>(**setup);
  // The reference's adapters over a frozen bf16 base, and its loss.
  EXPECT_EQ(s.member().lora.rank, 16);
  EXPECT_EQ(s.member().lora.alpha, 32);
  EXPECT_EQ(s.member().lora.dropout, 0.1f);
  EXPECT_EQ(s.member().frozen_dtype, core::DType::kBF16);
  EXPECT_TRUE(s.member().sample_mean_loss);
  EXPECT_EQ(plan.global_batch_size, 8);
  EXPECT_EQ(Logged(**setup)["lora_rank"].as_int(), 16);
  const std::string readme = (*setup)->ReadmeSection();
  EXPECT_NE(readme.find("generated summarisation task"), std::string::npos);
  EXPECT_NE(readme.find("pre-trained"), std::string::npos);
}

TEST(LoraPlan, AnotherOptimizerIsAUsageError) {
  RunnerOptions o;
  o.benchmark = "llama2_70b_lora";
  o.optimizer = "lamb";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mlperf::benchmarks::llama2_70b_lora
