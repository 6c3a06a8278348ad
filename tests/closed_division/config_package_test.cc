// Label `resnet`: run_closed's pieces that need no training: the recipes per
// scale and the demo's closed-division constraints, the package paths and the
// no-overwrite rule, the system description and the progress estimate.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "checker/package/system_desc.h"
#include "closed_division/config.h"
#include "closed_division/package.h"
#include "closed_division/progress.h"
#include "closed_division/system_info.h"
#include "fmt/format.h"
#include "logging/json.h"

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

void ExpectClosedResnetRecipe(const RunPlan& plan) {
  const ResnetRecipe& r = plan.recipe;
  EXPECT_EQ(r.end_lr, 1e-4);
  EXPECT_EQ(r.poly_power, 2.0);
  const double k = std::log2(r.weight_decay / 1e-4);
  EXPECT_EQ(k, std::round(k)) << "weight decay " << r.weight_decay << " is not 1e-4 * 2^k";
  EXPECT_TRUE(r.label_smoothing == 0.0 || r.label_smoothing == 0.1);
  EXPECT_GE(r.first_eval_epoch, 1);
  EXPECT_LE(r.first_eval_epoch, 4);
  EXPECT_EQ(r.eval_every_epochs, 4);
  EXPECT_TRUE(plan.is_eval_epoch(plan.last_epoch()));
  EXPECT_GE(plan.last_epoch(), r.decay_epochs);
}

TEST(RunPlan, DemoKeepsEveryClosedConstraintAndIsLabelled) {
  absl::StatusOr<RunPlan> plan = MakeRunPlan({}, 1, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE(plan->demo);
  ExpectClosedResnetRecipe(*plan);
  EXPECT_NE(plan->system_name.find("demo"), std::string::npos);
  EXPECT_FALSE(plan->rcp_batch_size);
  // The target must be reachable only after a few evaluations.
  EXPECT_GE(plan->last_epoch(), plan->recipe.first_eval_epoch + 8);
  EXPECT_EQ(plan->train_samples, 2000);
  EXPECT_GT(plan->steps_per_epoch(), 0);

  RunnerOptions named;
  named.system = "mybox";
  plan = MakeRunPlan(named, 1, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_NE(plan->system_name.find("demo"), std::string::npos) << plan->system_name;
}

TEST(RunPlan, ImagenetScalesUseRcpRecipes) {
  RunnerOptions o;
  o.data_dir = "/data/imagenet";
  o.gpus = 8;
  absl::StatusOr<RunPlan> plan = MakeRunPlan(o, 8, 2);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->recipe.global_batch_size, 3264);
  EXPECT_EQ(plan->batch_per_rank, 408);
  EXPECT_EQ(plan->recipe.base_lr, 10.5);
  EXPECT_EQ(plan->recipe.weight_decay, 5e-5);
  EXPECT_TRUE(plan->rcp_batch_size);
  EXPECT_EQ(plan->train_samples, 1281167);
  ExpectClosedResnetRecipe(*plan);
  // Evaluations at 3 + 4k, up to the end of the 37-epoch horizon.
  EXPECT_TRUE(plan->is_eval_epoch(3));
  EXPECT_TRUE(plan->is_eval_epoch(35));
  EXPECT_FALSE(plan->is_eval_epoch(4));
  EXPECT_EQ(plan->last_epoch(), 39);

  o.gpus = 4;
  plan = MakeRunPlan(o, 4, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->recipe.global_batch_size, 1632);
  EXPECT_EQ(plan->recipe.base_lr, 7.4);

  o.gpus = 1;  // no RCP batch size splits into one GPU's memory
  plan = MakeRunPlan(o, 1, 2);
  ASSERT_TRUE(plan.ok());
  EXPECT_FALSE(plan->rcp_batch_size);
  EXPECT_EQ(plan->recipe.global_batch_size, 408);

  o.optimizer = "sgd";
  plan = MakeRunPlan(o, 1, 2);
  ASSERT_TRUE(plan.ok());
  const double units = plan->recipe.base_lr / 0.001;
  EXPECT_NEAR(units, std::round(units), 1e-9);
}

TEST(RunPlan, RejectsWhatItCannotRun) {
  RunnerOptions o;
  o.benchmark = "bert";
  EXPECT_FALSE(MakeRunPlan(o, 1, 2).ok());
  o = {};
  o.optimizer = "adam";
  EXPECT_FALSE(MakeRunPlan(o, 1, 2).ok());
  o = {};
  o.gpus = 8;
  o.data_dir = "/x";
  EXPECT_FALSE(MakeRunPlan(o, 2, 2).ok());  // 8 GPUs need 8 processes
  o = {};
  EXPECT_FALSE(MakeRunPlan(o, 3, 2).ok());  // 64 does not split over 3
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
  absl::StatusOr<RunPlan> plan = MakeRunPlan({}, 1, 2);
  ASSERT_TRUE(plan.ok());
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
  EXPECT_NE(doc->Find("system_name")->as_string().find("not ImageNet"), std::string::npos);
  EXPECT_NE(doc->Find("hw_notes")->as_string().find("generated data"), std::string::npos);
  EXPECT_NE(doc->Find("host_processor_model_name")->as_string(), "");
  // Gathered twice, the same: a rerun into the same package keeps the file.
  EXPECT_EQ(text, SystemDescriptionJson(*plan));
}

TEST(Progress, EstimatesTimeLeftFromTheRunsSoFar) {
  ProgressReporter p(5, 23, 0.759, nullptr);
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
