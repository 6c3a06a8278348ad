// The Llama 3.1 8B registry entry's plans: the closed recipe from the RCP
// table (the smallest RCP batch's rate and warm-up, decayed to a tenth),
// every closed_llama31_8b key logged once with the values the rules check,
// evaluations every 12,288 samples logged as samples_count, the
// demonstration's plan, the memory plan's refusals on 8 processes, and
// --tensor_parallel: the plan per data-parallel rank, the memory of the
// split model, and the layouts it refuses.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "benchmarks/llama31_8b/setup.h"

namespace mlperf::benchmarks::llama31_8b {

std::unique_ptr<Benchmark> MakeBenchmark();

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o, int world,
                                                          int64_t memory_bytes = 0) {
  return MakeBenchmark()->Configure(o, world, {.cores = 2, .memory_bytes = memory_bytes});
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

TEST(Llama31Plan, C4UsesTheRcpRecipeAndLogsEveryClosedKeyOnce) {
  RunnerOptions o;
  o.benchmark = "llama31_8b";
  o.data_dir = "/nonexistent-c4";  // configuring reads no data
  o.ruleset = "6.0.0";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 8);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_FALSE(plan.demo);
  EXPECT_EQ(plan.target.value(), 3.3);
  EXPECT_EQ(plan.required_runs, 10);
  EXPECT_TRUE(plan.rcp_batch_size);
  EXPECT_EQ(plan.global_batch_size, 16);  // rcps_llama31_8b.json's smallest
  EXPECT_EQ(plan.batch_per_rank, 2);
  const auto& s = static_cast<const Llama31Setup&>(**setup);
  EXPECT_EQ(s.recipe().base_lr, 0.0004);
  EXPECT_EQ(s.recipe().end_lr, 0.0004 * 0.1);
  EXPECT_EQ(s.recipe().warmup_steps, 256 / 16);
  EXPECT_EQ(s.member().layers, 32);
  EXPECT_EQ(s.member().attention_chunk, 0);
  EXPECT_NE(s.files().train.find("c4-train.en_6_text_document"), std::string::npos);
  // Evaluations every 12,288 samples (768 steps of 16), logged as samples.
  EXPECT_TRUE(plan.schedule.samples_count);
  EXPECT_EQ(plan.schedule.steps_through(1), 768);
  EXPECT_EQ(plan.schedule.At(13)[0].second.as_int(), 159744);  // the RCP's usual convergence
  // The last evaluation within the rules' max_steps.
  EXPECT_LE(plan.schedule.steps_through(plan.last_epoch()), kMaxSteps);
  EXPECT_GT(plan.schedule.steps_through(plan.last_epoch() + 1), kMaxSteps);

  std::map<std::string, json::Value> v = Logged(**setup);
  EXPECT_EQ(v["max_sequence_length"].as_int(), 8192);
  EXPECT_EQ(v["opt_name"].as_string(), "adamw");
  EXPECT_EQ(v["opt_adamw_beta_1"].as_float(), 0.9);
  EXPECT_EQ(v["opt_adamw_beta_2"].as_float(), 0.95);
  EXPECT_EQ(v["opt_adamw_epsilon"].as_float(), 1e-05);
  EXPECT_EQ(v["opt_adamw_weight_decay"].as_float(), 0.1);
  EXPECT_EQ(v["opt_gradient_clip_norm"].as_float(), 1.0);
  EXPECT_EQ(v["opt_learning_rate_decay_schedule"].as_string(), "cosine with linear warmup");
  EXPECT_EQ(v["opt_learning_rate_warmup_steps"].as_int(), 16);
  EXPECT_EQ(v["opt_learning_rate_decay_steps"].as_int(), 1'200'000 - 16);
  EXPECT_EQ(v["max_steps"].as_int(), 1'200'000);
  EXPECT_EQ(v["eval_samples"].as_int(), 1024);
  EXPECT_EQ(v["gradient_accumulation_steps"].as_int(), 1);
  for (const char* key : {"global_batch_size", "opt_base_learning_rate", "opt_end_learning_rate"})
    EXPECT_EQ(v.count(key), 1u) << key;
  EXPECT_EQ(v.count("train_samples"), 0u);  // logged at run_stop: the samples trained
}

TEST(Llama31Plan, TheDemonstrationIsASmallMemberOnAGeneratedLanguage) {
  RunnerOptions o;
  o.benchmark = "llama31_8b";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_TRUE(plan.demo);
  EXPECT_FALSE(plan.rcp_batch_size);
  const auto& s = static_cast<const Llama31Setup&>(**setup);
  // The rules' sequence and evaluation set: 8192 tokens a sample, 1024
  // samples (distinct ones tiled to it).
  EXPECT_EQ(s.member().seq_len, 8192);
  EXPECT_EQ(plan.eval_samples, 1024);
  EXPECT_EQ(1024 % s.files().distinct_eval, 0);
  EXPECT_GT(s.member().attention_chunk, 0);
  EXPECT_EQ(Logged(**setup)["max_sequence_length"].as_int(), 8192);
  const std::string readme = (*setup)->ReadmeSection();
  EXPECT_NE(readme.find("generated"), std::string::npos);
  EXPECT_NE(readme.find("chunks"), std::string::npos);
}

// The memory plan on 8 processes (a GPU's memory is read from the device;
// the same plan applies to a process's share of the host), printed: with
// 80 GiB each the whole model (211.2 GiB, 85.3 recomputing) is refused
// naming the split that fits (tp 2 recomputing), with 40 GiB tp 4.
TEST(Llama31Plan, EightProcessesAreRefusedNamingTheLayoutThatWouldFit) {
  RunnerOptions o;
  o.benchmark = "llama31_8b";
  o.data_dir = "/nonexistent-c4";
  for (const auto& [gib, wanted] : {std::pair<int64_t, std::string>{80, "pass --tensor_parallel 2"},
                                    {40, "pass --tensor_parallel 4"}}) {
    absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 8, gib * kGiB);
    ASSERT_FALSE(setup.ok());
    EXPECT_EQ(setup.status().code(), absl::StatusCode::kResourceExhausted);
    const std::string message(setup.status().message());
    std::printf("%s\n", message.c_str());
    EXPECT_NE(message.find("tp 1 x dp 8"), std::string::npos) << message;
    EXPECT_NE(message.find("recomputing activations"), std::string::npos) << message;
    EXPECT_NE(message.find(wanted), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

const Llama31Setup& AsLlama(const std::unique_ptr<BenchmarkSetup>& setup) {
  return dynamic_cast<const Llama31Setup&>(*setup);
}

// Where the whole model fits only recomputing its activations, the runs
// recompute; with more memory they do not.
TEST(Llama31Plan, RecomputationWhereOnlyItFits) {
  RunnerOptions o;
  o.benchmark = "llama31_8b";
  o.data_dir = "/nonexistent-c4";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> tight = Configure(o, 8, 100 * kGiB);
  ASSERT_TRUE(tight.ok()) << tight.status();
  EXPECT_TRUE(AsLlama(*tight).member().recompute);
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> roomy = Configure(o, 8, 300 * kGiB);
  ASSERT_TRUE(roomy.ok()) << roomy.status();
  EXPECT_FALSE(AsLlama(*roomy).member().recompute);
}

TEST(Llama31Plan, TensorParallelGroupsAreTheDataParallelRanks) {
  RunnerOptions o;
  o.benchmark = "llama31_8b";
  o.data_dir = "/nonexistent-c4";
  // 60 GiB per process: the whole model does not fit even recomputing
  // (85.3 GiB); split over two, recomputing, it does (49.2 GiB), and the
  // refusal says which flag does that.
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> whole = Configure(o, 8, 60 * kGiB);
  ASSERT_FALSE(whole.ok());
  const std::string message(whole.status().message());
  EXPECT_NE(message.find("pass --tensor_parallel 2"), std::string::npos) << message;
  o.tensor_parallel = 2;
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> split = Configure(o, 8, 60 * kGiB);
  ASSERT_TRUE(split.ok()) << split.status();
  EXPECT_TRUE(AsLlama(*split).member().recompute);
  const RunPlan& plan = (*split)->plan();
  EXPECT_EQ(plan.tensor_parallel, 2);
  EXPECT_EQ(plan.world_size, 4);
  EXPECT_EQ(plan.processes(), 8);
  // The smallest RCP batch that 4 data-parallel ranks divide, 4 each.
  EXPECT_EQ(plan.global_batch_size, 16);
  EXPECT_EQ(plan.batch_per_rank, 4 / plan.gradient_accumulation_steps);
  EXPECT_EQ(plan.system_name, "1xnode-cpu-8proc");
  // Groups that do not divide the processes, and a model that does not
  // split (the demonstration's 2 key/value heads over 4), are usage errors.
  for (const auto& [tensor, world, data] :
       {std::tuple{3, 8, o.data_dir}, std::tuple{4, 4, std::string()}}) {
    o.tensor_parallel = tensor;
    o.data_dir = data;
    absl::StatusOr<std::unique_ptr<BenchmarkSetup>> refused = Configure(o, world, 60 * kGiB);
    ASSERT_FALSE(refused.ok()) << tensor;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  }
}

TEST(Llama31Plan, AnotherOptimizerIsAUsageError) {
  RunnerOptions o;
  o.benchmark = "llama31_8b";
  o.optimizer = "lamb";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mlperf::benchmarks::llama31_8b
