// The RetinaNet registry entry's plans: the closed recipe from the RCP
// table (batch 256, rate 1e-4, one warm-up epoch from 1e-3), every
// closed_retinanet key logged once with the values the rules check, an
// evaluation after every epoch, the warm-up as the reference's
// warmup_lr_scheduler steps it, the demonstration's plan and the usage
// errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

#include "benchmarks/retinanet/setup.h"

namespace mlperf::benchmarks::retinanet {

std::unique_ptr<Benchmark> MakeBenchmark();

namespace {

absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o, int world,
                                                          int64_t memory_bytes = 0) {
  return MakeBenchmark()->Configure(o, world, {.cores = 2, .memory_bytes = memory_bytes});
}

RunnerOptions OpenImages() {
  RunnerOptions o;
  o.benchmark = "retinanet";
  o.data_dir = "/nonexistent-openimages";  // configuring reads no data
  o.ruleset = "5.1.0";
  o.flags["backbone"] = "/nonexistent-resnext50.safetensors";
  return o;
}

TEST(RetinaNetPlan, OpenImagesUsesTheRcpRecipeAndLogsEveryClosedKeyOnce) {
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(OpenImages(), 8);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_FALSE(plan.demo);
  EXPECT_EQ(plan.target.value(), 0.34);
  EXPECT_EQ(plan.required_runs, 5);
  EXPECT_TRUE(plan.rcp_batch_size);
  EXPECT_EQ(plan.global_batch_size, 256);  // rcps_retinanet.json's smallest
  EXPECT_EQ(plan.batch_per_rank, 32);
  EXPECT_EQ(plan.train_samples, 1170301);
  EXPECT_EQ(plan.eval_samples, 24781);
  EXPECT_EQ(plan.schedule.steps_per_epoch, 1170301 / 256);
  EXPECT_TRUE(plan.schedule.is_eval_epoch(1));
  EXPECT_EQ(plan.schedule.last_epoch, 26);
  const auto& s = static_cast<const RetinaNetSetup&>(**setup);
  EXPECT_EQ(s.member().backbone.groups, 32);
  EXPECT_EQ(s.member().backbone.width_per_group, 4);
  EXPECT_EQ(s.member().backbone.blocks, (std::array<int, 4>{3, 4, 6, 3}));
  EXPECT_EQ(s.member().backbone.trainable_layers, 3);
  EXPECT_EQ(s.member().backbone.image_size, 800);
  EXPECT_EQ(s.member().num_classes, 264);

  std::map<std::string, json::Value> v;
  std::map<std::string, int> counts;
  for (const auto& [key, value] : s.Hyperparameters()) {
    EXPECT_EQ(++counts[key], 1) << key << " logged twice";
    v[key] = value;
  }
  EXPECT_EQ(v["global_batch_size"].as_int(), 256);
  EXPECT_EQ(v["opt_name"].as_string(), "adam");
  EXPECT_EQ(v["opt_base_learning_rate"].as_float(), 1e-4);
  EXPECT_EQ(v["opt_weight_decay"].as_int(), 0);
  EXPECT_EQ(v["opt_learning_rate_warmup_epochs"].as_int(), 1);
  EXPECT_EQ(v["opt_learning_rate_warmup_factor"].as_float(), 1e-3);

  // The warm-up: LambdaLR's factor * (1 - x / W) + x / W at the x-th step
  // (from 0) of the first epoch, the base rate from the second on.
  const auto schedule = s.MakeSchedule();
  const int64_t w = plan.schedule.steps_per_epoch;
  EXPECT_DOUBLE_EQ(schedule->At(1), 1e-4 * 1e-3);
  const double alpha = static_cast<double>(w / 2) / static_cast<double>(w);
  EXPECT_DOUBLE_EQ(schedule->At(w / 2 + 1), 1e-4 * (1e-3 * (1 - alpha) + alpha));
  EXPECT_DOUBLE_EQ(schedule->At(w + 1), 1e-4);
  EXPECT_LT(schedule->At(w), 1e-4);
}

TEST(RetinaNetPlan, TheDemonstrationIsASmallMemberOnGeneratedShapes) {
  RunnerOptions o;
  o.benchmark = "retinanet";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_TRUE(plan.demo);
  EXPECT_FALSE(plan.rcp_batch_size);
  EXPECT_EQ(plan.target.value(), 0.34);  // the real target
  const auto& s = static_cast<const RetinaNetSetup&>(**setup);
  EXPECT_EQ(s.member().num_classes, 3);
  EXPECT_LT(s.member().backbone.image_size, 800);
  EXPECT_NE(s.ReadmeSection().find("generated"), std::string::npos);
}

// One CPU process of 20 GiB: the reference's 800 x 800 model does not take
// the RCP batch of 256 at once, so its micro-batches accumulate (the memory
// plan measured from the model's arenas, nothing allocated).
TEST(RetinaNetPlan, OneCpuProcessAccumulatesTheRcpBatch) {
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup =
      Configure(OpenImages(), 1, int64_t{20} << 30);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_EQ(plan.global_batch_size, 256);
  EXPECT_GT(plan.gradient_accumulation_steps, 1);
  EXPECT_EQ(plan.batch_per_rank * plan.gradient_accumulation_steps, 256);
  std::printf("micro-batch %lld, %d accumulation steps\n",
              static_cast<long long>(plan.batch_per_rank), plan.gradient_accumulation_steps);
}

TEST(RetinaNetPlan, AnotherOptimizerIsAUsageError) {
  RunnerOptions o = OpenImages();
  o.optimizer = "sgd";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 8);
  ASSERT_FALSE(setup.ok());
  EXPECT_EQ(setup.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(setup.status().message().find("Adam"), std::string::npos);
}

}  // namespace
}  // namespace mlperf::benchmarks::retinanet
