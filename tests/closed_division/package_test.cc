// run_closed's pieces that need no training: the package paths and the
// no-overwrite rule, the system description and the progress estimate.
#include "closed_division/package.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/json.h"
#include "benchmarks/registry.h"
#include "checker/package/system_desc.h"
#include "closed_division/progress.h"
#include "fmt/format.h"
#include "runtime/system_info.h"

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

TEST(Package, RefusesToOverwriteAnyEarlierResult) {
  const fs::path out = TempDir("overwrite");
  const PackagePaths p = MakePackagePaths(out.string(), "org", "sys", "resnet");
  EXPECT_EQ(p.Result(3), out / "org/results/sys/resnet/result_3.txt");
  EXPECT_EQ(p.system_json, out / "org/systems/sys.json");
  EXPECT_TRUE(CheckNothingToOverwrite(p, "{}\n").ok());
  ASSERT_TRUE(PreparePackage(p, "{}\n", "# readme\n").ok());
  EXPECT_TRUE(CheckNothingToOverwrite(p, "{}\n").ok());

  std::ofstream(p.Incomplete(0)) << "partial\n";
  absl::Status s = CheckNothingToOverwrite(p, "{}\n");
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
  EXPECT_FALSE(CheckNothingToOverwrite(p, "{}\n").ok());
  fs::remove_all(out);
}

TEST(Package, KeepsAnIdenticalSystemJsonAndRefusesADifferentOne) {
  const fs::path out = TempDir("sysjson");
  const PackagePaths p = MakePackagePaths(out.string(), "org", "sys", "resnet");
  ASSERT_TRUE(PreparePackage(p, "{\"a\": \"1\"}\n", "section one\n").ok());
  EXPECT_TRUE(PreparePackage(p, "{\"a\": \"1\"}\n", "section one\n").ok());
  EXPECT_EQ(Slurp(p.readme), "section one\n");
  EXPECT_FALSE(PreparePackage(p, "{\"a\": \"2\"}\n", "section one\n").ok());
  EXPECT_EQ(CheckNothingToOverwrite(p, "{\"a\": \"2\"}\n").code(),
            absl::StatusCode::kFailedPrecondition)
      << "refused before the data is prepared";
  EXPECT_EQ(Slurp(p.system_json), "{\"a\": \"1\"}\n");
  ASSERT_TRUE(PreparePackage(p, "{\"a\": \"1\"}\n", "section two\n").ok());
  EXPECT_EQ(Slurp(p.readme), "section one\n\nsection two\n");
  fs::remove_all(out);
}

TEST(SystemDescription, HasEveryRequiredFieldAsAStringAndSaysDemo) {
  // Any benchmark's demonstration: the default one's.
  absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> setup =
      benchmarks::BuiltinBenchmarks().Default()->Configure({}, 1, {.cores = 2});
  ASSERT_TRUE(setup.ok());
  const benchmarks::RunPlan* plan = &(*setup)->plan();
  const std::string text = runtime::SystemDescriptionJson(*plan);
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
  EXPECT_EQ(text, runtime::SystemDescriptionJson(*plan));
}

TEST(Progress, EstimatesTimeLeftFromTheRunsSoFar) {
  ProgressReporter p(5, 23, *quality::QualityTarget::Parse("v >= 0.759 and v < 1.0"), "top-1",
                     nullptr);
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
