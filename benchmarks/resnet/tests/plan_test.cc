// The ResNet registry entry's plans: its recipes per scale from the RCP
// table, the demo's closed-division constraints and labels, gradient
// accumulation on a CPU's memory, and what it refuses.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "benchmarks/resnet/setup.h"
#include "reference/models/resnet.h"

namespace mlperf::benchmarks::resnet {

std::unique_ptr<Benchmark> MakeBenchmark();

namespace {

// The ResNet entry configured as run_closed would for `world` processes.
absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o, int world,
                                                          int64_t memory_bytes = 0) {
  return MakeBenchmark()->Configure(o, world, {.cores = 2, .memory_bytes = memory_bytes});
}

// The logged hyperparameter `name` (fails the test when absent).
json::Value Logged(const BenchmarkSetup& setup, const std::string& name) {
  for (const auto& [key, value] : setup.Hyperparameters())
    if (key == name) return value;
  ADD_FAILURE() << name << " is not logged";
  return json::Value();
}

const Recipe& RecipeOf(const BenchmarkSetup& setup) {
  return static_cast<const ResnetSetup&>(setup).recipe();
}

void ExpectClosedResnetRecipe(const BenchmarkSetup& setup) {
  const Recipe& t = RecipeOf(setup);
  const RunPlan& plan = setup.plan();
  EXPECT_EQ(t.end_lr, 1e-4);
  EXPECT_EQ(t.poly_power, 2.0);
  const double k = std::log2(t.weight_decay / 1e-4);
  EXPECT_EQ(k, std::round(k)) << "weight decay " << t.weight_decay << " is not 1e-4 * 2^k";
  EXPECT_EQ(Logged(setup, "global_batch_size").as_int(), plan.global_batch_size);
  EXPECT_EQ(Logged(setup, "model_bn_span").as_int(), plan.batch_per_rank);
  EXPECT_GE(plan.schedule.first_eval_epoch, 1);
  EXPECT_LE(plan.schedule.first_eval_epoch, 4);
  EXPECT_EQ(plan.schedule.eval_every_epochs, 4);
  EXPECT_TRUE(plan.schedule.is_eval_epoch(plan.last_epoch()));
  EXPECT_GE(plan.last_epoch(), t.decay_epochs);
  EXPECT_EQ(plan.ruleset, "4.0.0");
  EXPECT_EQ(plan.target.value(), 0.759);
  EXPECT_TRUE(plan.target.higher_is_better());
  EXPECT_EQ(plan.required_runs, 5);
  EXPECT_EQ(plan.schedule.steps_per_epoch, plan.train_samples / plan.global_batch_size);
}

TEST(RunPlan, DemoKeepsEveryClosedConstraintAndIsLabelled) {
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure({}, 1);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan& plan = (*setup)->plan();
  EXPECT_TRUE(plan.demo);
  ExpectClosedResnetRecipe(**setup);
  EXPECT_NE(plan.system_name.find("demo"), std::string::npos);
  EXPECT_FALSE(plan.rcp_batch_size);
  // The target must be reachable only after a few evaluations.
  EXPECT_GE(plan.last_epoch(), plan.schedule.first_eval_epoch + 8);
  EXPECT_EQ(plan.train_samples, 2000);
  EXPECT_GT(plan.schedule.steps_per_epoch, 0);

  RunnerOptions named;
  named.system = "mybox";
  setup = Configure(named, 1);
  ASSERT_TRUE(setup.ok());
  EXPECT_NE((*setup)->plan().system_name.find("demo"), std::string::npos);
}

TEST(RunPlan, ImagenetScalesUseTheRcpReferenceHyperparameters) {
  RunnerOptions o;
  o.data_dir = "/data/imagenet";
  o.gpus = 8;
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure(o, 8);
  ASSERT_TRUE(setup.ok()) << setup.status();
  const RunPlan* plan = &(*setup)->plan();
  // The values of rcps_resnet.json (4.0.0) at batch size 3264.
  EXPECT_EQ(plan->global_batch_size, 3264);
  EXPECT_EQ(plan->batch_per_rank, 408);
  EXPECT_EQ(RecipeOf(**setup).base_lr, 10.5);
  EXPECT_EQ(RecipeOf(**setup).weight_decay, 5e-5);
  EXPECT_EQ(RecipeOf(**setup).decay_epochs, 37);  // 14523 decay steps
  EXPECT_TRUE(plan->rcp_batch_size);
  EXPECT_EQ(plan->train_samples, 1281167);
  ExpectClosedResnetRecipe(**setup);
  // Evaluations at 3 + 4k, up to the end of the 37-epoch horizon.
  EXPECT_TRUE(plan->schedule.is_eval_epoch(3));
  EXPECT_TRUE(plan->schedule.is_eval_epoch(35));
  EXPECT_FALSE(plan->schedule.is_eval_epoch(4));
  EXPECT_EQ(plan->last_epoch(), 39);

  o.gpus = 4;
  setup = Configure(o, 4);
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ((*setup)->plan().global_batch_size, 1632);
  EXPECT_EQ(RecipeOf(**setup).base_lr, 7.4);
  EXPECT_EQ(RecipeOf(**setup).decay_epochs, 35);

  o.gpus = 128;  // the 49152 reference (384 per GPU) is the largest that fits
  setup = Configure(o, 128);
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ((*setup)->plan().global_batch_size, 49152);
  EXPECT_EQ(RecipeOf(**setup).momentum, 0.951807);

  o.gpus = 1;  // no RCP batch size splits into one GPU's memory
  setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok());
  EXPECT_FALSE((*setup)->plan().rcp_batch_size);
  EXPECT_EQ((*setup)->plan().global_batch_size, 408);

  o.optimizer = "sgd";
  setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok());
  const double units = RecipeOf(**setup).base_lr / 0.001;
  EXPECT_NEAR(units, std::round(units), 1e-9);
  EXPECT_EQ(Logged(**setup, "opt_name").as_string(), "sgd");
}

// A rank's batch that does not fit its memory is split into micro-batches
// whose gradients accumulate; the logs say so, and too little memory for one
// sample is a one-line error with both figures.
TEST(RunPlan, ABatchThatDoesNotFitAccumulatesMicroBatches) {
  RunnerOptions o;
  o.data_dir = "/data/imagenet";
  constexpr int64_t kGiB = int64_t{1} << 30;
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> roomy = Configure(o, 1, 4096 * kGiB);
  ASSERT_TRUE(roomy.ok()) << roomy.status();
  EXPECT_EQ((*roomy)->plan().gradient_accumulation_steps, 1);
  EXPECT_EQ((*roomy)->plan().batch_per_rank, 408);

  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> tight = Configure(o, 1, 16 * kGiB);
  ASSERT_TRUE(tight.ok()) << tight.status();
  const RunPlan& plan = (*tight)->plan();
  EXPECT_GT(plan.gradient_accumulation_steps, 1);
  EXPECT_EQ(plan.batch_per_rank * plan.gradient_accumulation_steps, 408);
  EXPECT_EQ(plan.global_batch_size, 408);
  EXPECT_EQ(TrainerConfigFor(plan).gradient_accumulation_steps, plan.gradient_accumulation_steps);
  EXPECT_EQ(Logged(**tight, "gradient_accumulation_steps").as_int(),
            plan.gradient_accumulation_steps);
  EXPECT_EQ(Logged(**tight, "model_bn_span").as_int(), plan.batch_per_rank);
  models::ResNetConfig full;
  full.layout = core::Layout::kNHWC;
  EXPECT_LE(models::ResNet::ArenaBytes(full, plan.batch_per_rank), 16 * kGiB);
  EXPECT_GT(models::ResNet::ArenaBytes(full, 408), 16 * kGiB);

  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> tiny = Configure(o, 1, 1 << 20);
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("GiB but a process has 0.0 GiB"), std::string::npos)
      << tiny.status();
}

TEST(RunPlan, RejectsWhatItCannotRun) {
  RunnerOptions o;
  o.optimizer = "adam";
  EXPECT_FALSE(Configure(o, 1).ok());
  o = {};
  o.gpus = 8;
  o.data_dir = "/x";
  EXPECT_FALSE(Configure(o, 2).ok());  // 8 GPUs need 8 processes
  o = {};
  EXPECT_FALSE(Configure(o, 3).ok());  // 64 does not split over 3
  o = {};
  o.ruleset = "5.0.0";  // the round that dropped ResNet
  EXPECT_FALSE(Configure(o, 1).ok());
  o.ruleset = "3.1.0";
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> older = Configure(o, 1);
  ASSERT_TRUE(older.ok()) << older.status();
  EXPECT_EQ((*older)->plan().ruleset, "3.1.0");
  o = {};
  o.flags["gpu_decode"] = "true";  // needs --gpus
  EXPECT_FALSE(Configure(o, 1).ok());
  o.flags = {{"nonsense", "1"}};
  EXPECT_FALSE(Configure(o, 1).ok());
}

}  // namespace
}  // namespace mlperf::benchmarks::resnet
