// The GPT-3 registry entry's plans: the embedded default under the rules'
// recipe (Adam at 3e-5 with epsilon 1e-8, clipping at 1.0, the cosine
// schedule resumed at the starting checkpoint's step), every closed_gpt3
// key once with the values the rules check, epoch_num in tokens, and the
// refusals (--data, another optimizer) as one-line errors.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "benchmarks/gpt3/setup.h"

namespace mlperf::benchmarks::gpt3 {

std::unique_ptr<Benchmark> MakeBenchmark();

namespace {

absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o) {
  return MakeBenchmark()->Configure(o, 1, {.cores = 2});
}

TEST(Gpt3Plan, TheDemonstrationFollowsTheRulesRecipeAndLogsEveryClosedKeyOnce) {
  RunnerOptions o;
  o.benchmark = "gpt3";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_TRUE(plan.demo);
  EXPECT_EQ(plan.ruleset, "4.1.0");
  EXPECT_EQ(plan.required_runs, 3);
  // The target window (2.6, 2.69].
  EXPECT_TRUE(plan.target.Reached(2.69));
  EXPECT_FALSE(plan.target.Reached(2.6));
  EXPECT_FALSE(plan.target.Reached(2.7));
  const auto& s = static_cast<const Gpt3Setup&>(**setup);
  EXPECT_TRUE(s.member().layer_norm && s.member().gelu && s.member().bias &&
              s.member().tie_embeddings);
  EXPECT_EQ(s.member().learned_positions, 2048);
  // Resumed: the schedule's first step is the one after the checkpoint's.
  const std::unique_ptr<optim::LearningRateSchedule> schedule = (*setup)->MakeSchedule();
  optim::CosineWithWarmup from_zero({.max_lr = s.recipe().base_lr,
                                     .min_lr = s.recipe().end_lr,
                                     .warmup_steps = s.recipe().warmup_steps,
                                     .decay_steps = s.recipe().decay_steps});
  EXPECT_GT(s.recipe().checkpoint_step, s.recipe().warmup_steps);
  EXPECT_EQ(schedule->At(1), from_zero.At(s.recipe().checkpoint_step + 1));
  // epoch_num counts tokens: one step of the batch is batch x 2048 of them.
  EXPECT_EQ(plan.schedule.At(1)[0].second.as_int(), plan.global_batch_size * 2048);

  std::map<std::string, json::Value> v;
  std::map<std::string, int> counts;
  for (const auto& [key, value] : (*setup)->Hyperparameters()) {
    EXPECT_EQ(++counts[key], 1) << key << " logged twice";
    v[key] = value;
  }
  EXPECT_EQ(v["max_sequence_length"].as_int(), 2048);
  EXPECT_EQ(v["opt_name"].as_string(), "adam");
  EXPECT_EQ(v["opt_base_learning_rate"].as_float(), 3e-05);
  EXPECT_EQ(v["opt_adam_beta_1"].as_float(), 0.9);
  EXPECT_EQ(v["opt_adam_beta_2"].as_float(), 0.95);
  EXPECT_EQ(v["opt_adam_epsilon"].as_float(), 1e-08);
  EXPECT_EQ(v["opt_gradient_clip_norm"].as_float(), 1.0);
  EXPECT_EQ(v["opt_learning_rate_decay_schedule"].as_string(), "cosine with linear warmup");
  EXPECT_EQ(v["init_checkpoint_step"].as_int(), s.recipe().checkpoint_step);
  EXPECT_GT(v["init_checkpoint_step"].as_int(), 0);
  for (const char* key :
       {"global_batch_size", "opt_end_learning_rate", "opt_learning_rate_decay_steps",
        "opt_learning_rate_warmup_steps", "gradient_accumulation_steps", "eval_samples"})
    EXPECT_EQ(v.count(key), 1u) << key;
  const std::string readme = (*setup)->ReadmeSection();
  EXPECT_NE(readme.find("generated"), std::string::npos);
  EXPECT_NE(readme.find("pre-trained"), std::string::npos);
}

TEST(Gpt3Plan, RealDataAndAnotherOptimizerAreRefusedInOneLine) {
  RunnerOptions o;
  o.benchmark = "gpt3";
  o.data_dir = "/nonexistent-c4";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o);
  ASSERT_FALSE(setup.ok());
  EXPECT_NE(setup.status().message().find("pipeline parallelism"), std::string::npos);
  EXPECT_EQ(setup.status().message().find('\n'), std::string::npos);
  o.data_dir.clear();
  o.optimizer = "lamb";
  setup = Configure(o);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace mlperf::benchmarks::gpt3
