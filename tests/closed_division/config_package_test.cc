// Label `resnet`: run_closed's pieces that need no training: the ResNet
// registry entry's recipes per scale and the demo's closed-division constraints, the package paths
// and the no-overwrite rule, the system description and the progress estimate.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json.h"
#include "checker/package/system_desc.h"
#include "closed_division/config.h"
#include "closed_division/package.h"
#include "closed_division/progress.h"
#include "closed_division/registry.h"
#include "closed_division/resnet_benchmark.h"
#include "closed_division/system_info.h"
#include "fmt/format.h"
#include "reference/models/resnet.h"

namespace mlperf::closed {
namespace {

namespace fs = std::filesystem;

fs::path TempDir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("closed_test_{}_{}", name, getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string Slurp(const fs::path& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The ResNet entry configured as run_closed would for `world` processes.
absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& o, int world,
                                                          int64_t memory_bytes = 0) {
  return MakeResnetBenchmark()->Configure(o, world, {.cores = 2, .memory_bytes = memory_bytes});
}

// The logged hyperparameter `name` (fails the test when absent).
json::Value Logged(const BenchmarkSetup& setup, const std::string& name) {
  for (const auto& [key, value] : setup.Hyperparameters())
    if (key == name) return value;
  ADD_FAILURE() << name << " is not logged";
  return json::Value();
}

void ExpectClosedResnetRecipe(const BenchmarkSetup& setup) {
  const train::TrainerConfig t = setup.TrainerConfig();
  const RunPlan& plan = setup.plan();
  EXPECT_EQ(t.end_lr, 1e-4);
  EXPECT_EQ(t.poly_power, 2.0);
  const double k = std::log2(t.weight_decay / 1e-4);
  EXPECT_EQ(k, std::round(k)) << "weight decay " << t.weight_decay << " is not 1e-4 * 2^k";
  EXPECT_EQ(t.global_batch_size, plan.global_batch_size);
  EXPECT_EQ(Logged(setup, "global_batch_size").as_int(), plan.global_batch_size);
  EXPECT_EQ(Logged(setup, "model_bn_span").as_int(), plan.batch_per_rank);
  EXPECT_GE(plan.schedule.first_eval_epoch, 1);
  EXPECT_LE(plan.schedule.first_eval_epoch, 4);
  EXPECT_EQ(plan.schedule.eval_every_epochs, 4);
  EXPECT_TRUE(plan.schedule.is_eval_epoch(plan.last_epoch()));
  EXPECT_GE(plan.last_epoch(), t.train_epochs);
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
  EXPECT_EQ((*setup)->TrainerConfig().base_lr, 10.5);
  EXPECT_EQ((*setup)->TrainerConfig().weight_decay, 5e-5);
  EXPECT_EQ((*setup)->TrainerConfig().train_epochs, 37);  // 14523 decay steps
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
  EXPECT_EQ((*setup)->TrainerConfig().base_lr, 7.4);
  EXPECT_EQ((*setup)->TrainerConfig().train_epochs, 35);

  o.gpus = 128;  // the 49152 reference (384 per GPU) is the largest that fits
  setup = Configure(o, 128);
  ASSERT_TRUE(setup.ok());
  EXPECT_EQ((*setup)->plan().global_batch_size, 49152);
  EXPECT_EQ((*setup)->TrainerConfig().momentum, 0.951807);

  o.gpus = 1;  // no RCP batch size splits into one GPU's memory
  setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok());
  EXPECT_FALSE((*setup)->plan().rcp_batch_size);
  EXPECT_EQ((*setup)->plan().global_batch_size, 408);

  o.optimizer = "sgd";
  setup = Configure(o, 1);
  ASSERT_TRUE(setup.ok());
  const double units = (*setup)->TrainerConfig().base_lr / 0.001;
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
  EXPECT_EQ((*tight)->TrainerConfig().gradient_accumulation_steps,
            plan.gradient_accumulation_steps);
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
  EXPECT_EQ(BuiltinBenchmarks().Find("gpt3"), nullptr);
  for (const char* name : {"resnet", "unet3d", "bert"})
    EXPECT_NE(BuiltinBenchmarks().Find(name), nullptr) << name;
  RunnerOptions o;
  o.optimizer = "adam";
  EXPECT_FALSE(Configure(o, 1).ok());
  o = {};
  o.gpus = 8;
  o.data_dir = "/x";
  EXPECT_FALSE(Configure(o, 2).ok());  // 8 GPUs need 8 processes
  o = {};
  EXPECT_FALSE(Configure(o, 3).ok());  // 64 does not split over 3
}

TEST(Package, RefusesToOverwriteAnyEarlierResult) {
  const fs::path out = TempDir("overwrite");
  const PackagePaths p = MakePackagePaths(out.string(), "org", "sys", "resnet");
  EXPECT_EQ(p.Result(3), out / "org/results/sys/resnet/result_3.txt");
  EXPECT_EQ(p.system_json, out / "org/systems/sys.json");
  EXPECT_TRUE(CheckNothingToOverwrite(p).ok());
  ASSERT_TRUE(PreparePackage(p, "{}\n", "# readme\n").ok());
  EXPECT_TRUE(CheckNothingToOverwrite(p).ok());

  std::ofstream(p.Incomplete(0)) << "partial\n";
  absl::Status s = CheckNothingToOverwrite(p);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("result_0.txt.incomplete"), std::string::npos) << s;
  EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos);

  // Publishing renames, and never replaces an existing result.
  ASSERT_TRUE(CommitResult(p, 0).ok());
  EXPECT_EQ(Slurp(p.Result(0)), "partial\n");
  EXPECT_FALSE(fs::exists(p.Incomplete(0)));
  std::ofstream(p.Incomplete(0)) << "other\n";
  EXPECT_FALSE(CommitResult(p, 0).ok());
  EXPECT_EQ(Slurp(p.Result(0)), "partial\n");
  EXPECT_FALSE(CheckNothingToOverwrite(p).ok());
  fs::remove_all(out);
}

TEST(Package, KeepsAnIdenticalSystemJsonAndRefusesADifferentOne) {
  const fs::path out = TempDir("sysjson");
  const PackagePaths p = MakePackagePaths(out.string(), "org", "sys", "resnet");
  ASSERT_TRUE(PreparePackage(p, "{\"a\": \"1\"}\n", "section one\n").ok());
  EXPECT_TRUE(PreparePackage(p, "{\"a\": \"1\"}\n", "section one\n").ok());
  EXPECT_EQ(Slurp(p.readme), "section one\n");
  EXPECT_FALSE(PreparePackage(p, "{\"a\": \"2\"}\n", "section one\n").ok());
  EXPECT_EQ(Slurp(p.system_json), "{\"a\": \"1\"}\n");
  ASSERT_TRUE(PreparePackage(p, "{\"a\": \"1\"}\n", "section two\n").ok());
  EXPECT_EQ(Slurp(p.readme), "section one\n\nsection two\n");
  fs::remove_all(out);
}

TEST(SystemDescription, HasEveryRequiredFieldAsAStringAndSaysDemo) {
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> setup = Configure({}, 1);
  ASSERT_TRUE(setup.ok());
  const RunPlan* plan = &(*setup)->plan();
  const std::string text = SystemDescriptionJson(*plan);
  absl::StatusOr<json::Value> doc = json::Parse(text, {.encoding = json::Encoding::kUtf8});
  ASSERT_TRUE(doc.ok()) << doc.status() << "\n" << text;
  const package::SystemDescCheck check = package::CheckSystemDesc(*doc, "4.0.0");
  EXPECT_TRUE(check.valid) << (check.reasons.empty() ? "" : check.reasons[0]);
  for (const std::string& field : package::RequiredSystemDescFields()) {
    const json::Value* v = doc->Find(field);
    ASSERT_NE(v, nullptr) << field;
    EXPECT_TRUE(v->is_string()) << field;
  }
  EXPECT_EQ(doc->Find("division")->as_string(), "closed");
  EXPECT_EQ(doc->Find("accelerators_per_node")->as_string(), "0");
  EXPECT_NE(doc->Find("system_name")->as_string().find("demonstration on generated data"),
            std::string::npos);
  EXPECT_NE(doc->Find("hw_notes")->as_string().find("generated data"), std::string::npos);
  EXPECT_NE(doc->Find("host_processor_model_name")->as_string(), "");
  // Gathered twice, the same: a rerun into the same package keeps the file.
  EXPECT_EQ(text, SystemDescriptionJson(*plan));
}

TEST(Progress, EstimatesTimeLeftFromTheRunsSoFar) {
  ProgressReporter p(5, 23, 0.759, "top-1", nullptr);
  // First run, epoch 2 of 23 after 4 s: 21 epochs at 2 s + 4 runs of 46 s.
  EXPECT_DOUBLE_EQ(p.EstimateSecondsLeft(0, 2, 4.0), 21 * 2.0 + 4 * 46.0);
  p.RunFinished(0, 11, 20.0, true);
  // Later runs expect to converge where the first did, and to take as long.
  EXPECT_DOUBLE_EQ(p.EstimateSecondsLeft(1, 1, 2.0), 10 * 2.0 + 3 * 20.0);
  EXPECT_EQ(ProgressReporter::FormatDuration(75), "1m15s");
  EXPECT_EQ(ProgressReporter::FormatDuration(3700), "1h01m");
}

}  // namespace
}  // namespace mlperf::closed
