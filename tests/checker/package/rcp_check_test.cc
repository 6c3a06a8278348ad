#include "checker/package/rcp_check.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "checker/package/rcp_convergence.h"
#include "checker/py_ops.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

// A minimal resnet run: batch size, evals at the given epochs, then run_stop.
mllog::ParsedLog ResnetRun(int bs, const std::vector<double>& eval_epochs,
                           const std::string& status, const std::string& benchmark = "resnet") {
  std::string text;
  auto add = [&](const std::string& key, const std::string& value, const std::string& md) {
    text += fmt::format(
        ":::MLLOG {{\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", "
        "\"key\": \"{}\", \"value\": {}, \"metadata\": {{{}}}}}\n",
        key, value, md);
  };
  add("submission_benchmark", "\"" + benchmark + "\"", "");
  add("global_batch_size", std::to_string(bs), "");
  for (double e : eval_epochs) add("eval_accuracy", "0.76", fmt::format("\"epoch_num\": {}", e));
  add("run_stop", "null", "\"status\": \"" + status + "\"");
  return mllog::ParseText(text, "run.txt");
}

RcpCheckOptions Options() { return {.ruleset = "3.0.0"}; }

TEST(ReadRunConvergence, LastEvalBeforeSuccessfulStopRoundedToThreeDecimals) {
  absl::StatusOr<RunConvergence> r =
      ReadRunConvergence(ResnetRun(3264, {10, 20.00049, 34.1236}, "success"), {.ruleset = "3.0.0"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->converged);
  EXPECT_EQ(r->epochs, 34.124);
  EXPECT_TRUE(checker::py::Equals(r->global_batch_size, json::Value(3264)));
  r = ReadRunConvergence(ResnetRun(3264, {10}, "aborted"), {.ruleset = "3.0.0"});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->converged);
  EXPECT_EQ(r->epochs, kUnconvergedEpochs);
}

TEST(ReadRunConvergence, SuccessWithoutEvalIsAnError) {
  EXPECT_FALSE(ReadRunConvergence(ResnetRun(3264, {}, "success"), {.ruleset = "3.0.0"}).ok());
}

TEST(PythonRound3, TiesToEvenOnTheBinaryValue) {
  EXPECT_EQ(PythonRound3(0.0625), 0.062);  // exact tie, even digit kept
  EXPECT_EQ(PythonRound3(0.1875), 0.188);
  EXPECT_EQ(PythonRound3(2.0005), 2.001);  // the double is just above the tie
  EXPECT_EQ(PythonRound3(1.23456), 1.235);
}

TEST(CheckRcpLogs, ExactRecordPassesAndScalesWhenFaster) {
  // resnet 3264 (3.0.0): mean 35.1538..., min epochs 34.3096...
  std::vector<mllog::ParsedLog> logs;
  for (double e : {34.0, 35.0, 35.0, 35.0, 36.0}) logs.push_back(ResnetRun(3264, {e}, "success"));
  absl::StatusOr<RcpVerdict> v = CheckRcpLogs(logs, Options());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->message, "RCP found");
  ASSERT_TRUE(v->record);
  EXPECT_EQ(*v->submission_mean, 35.0);
  EXPECT_EQ(v->normalization_factor, v->record->mean / 35.0);
  EXPECT_EQ(v->scaling_factor_written, v->normalization_factor);
}

TEST(CheckRcpLogs, TooFastFailsAndBypassAcceptsIt) {
  std::vector<mllog::ParsedLog> logs;
  for (double e : {30.0, 30.0, 30.0, 30.0, 30.0}) logs.push_back(ResnetRun(3264, {e}, "success"));
  absl::StatusOr<RcpVerdict> v = CheckRcpLogs(logs, Options());
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->passed);
  EXPECT_FALSE(v->scaling_factor_written);
  EXPECT_TRUE(v->compared);
  RcpCheckOptions bypass = Options();
  bypass.bypass = true;
  v = CheckRcpLogs(logs, bypass);
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->message, "RCP found passed using rcp_bypass");
}

TEST(CheckRcpLogs, SlowerThanRcpPassesWithoutScaling) {
  std::vector<mllog::ParsedLog> logs;
  for (double e : {40.0, 40.0, 40.0, 40.0, 40.0}) logs.push_back(ResnetRun(3264, {e}, "success"));
  absl::StatusOr<RcpVerdict> v = CheckRcpLogs(logs, Options());
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->normalization_factor, 1.0);
  EXPECT_FALSE(v->scaling_factor_written);
}

TEST(CheckRcpLogs, BatchSizeOutsideTheRcps) {
  std::vector<mllog::ParsedLog> logs;
  for (int i = 0; i < 5; ++i) logs.push_back(ResnetRun(100000, {90}, "success"));
  absl::StatusOr<RcpVerdict> v = CheckRcpLogs(logs, Options());
  ASSERT_TRUE(v.ok());
  EXPECT_FALSE(v->passed);
  EXPECT_FALSE(v->compared);
  EXPECT_EQ(v->message, "Missing RCP, please submit RCP with BS = 100000");

  logs.clear();
  for (int i = 0; i < 5; ++i) logs.push_back(ResnetRun(512, {40}, "success"));
  v = CheckRcpLogs(logs, Options());
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->message, "RCP not found but slower convergence on smaller batch size");
  EXPECT_EQ(v->record->global_batch_size, 1632);
}

TEST(CheckRcpLogs, InsufficientConvergenceAndMismatch) {
  std::vector<mllog::ParsedLog> logs;
  for (int i = 0; i < 3; ++i) logs.push_back(ResnetRun(3264, {35}, "success"));
  for (int i = 0; i < 2; ++i) logs.push_back(ResnetRun(3264, {35}, "aborted"));
  absl::StatusOr<RcpVerdict> v = CheckRcpLogs(logs, Options());
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->message, "Insufficient convergence");
  EXPECT_FALSE(v->compared);

  logs.back() = ResnetRun(1632, {35}, "success");
  EXPECT_FALSE(CheckRcpLogs(logs, Options()).ok());  // the official tool raises here
}

// The published NVIDIA v3.0 resnet directory (BS 3200, one aborted run).
TEST(CheckRcpDirectory, CorpusResnetInterpolates) {
  const std::filesystem::path dir = std::filesystem::path(MLPERF_CORPUS_DIR) /
                                    "v3.0/NVIDIA/results/dgxh100_ngc23.04_mxnet/resnet";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no corpus at " << dir;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().starts_with("result_")) files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  absl::StatusOr<RcpVerdict> v = CheckRcpDirectory(files, Options());
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_TRUE(v->passed);
  EXPECT_EQ(v->message, "RCP Interpolation");
  EXPECT_EQ(v->unconverged_runs, 1);
  EXPECT_EQ(v->normalization_factor, 1.0042232277526395);  // spec 6.5, verified output
}

// Every corpus log reads the same when reduced to the lines
// ConvergenceReadsLine keeps, which is how package mode hands logs to the RCP
// check.
TEST(ConvergenceReadsLine, ReducedCorpusLogsReadTheSame) {
  const std::filesystem::path corpus(MLPERF_CORPUS_DIR);
  if (!std::filesystem::is_directory(corpus)) GTEST_SKIP() << "no corpus at " << corpus;
  int logs = 0;
  size_t kept = 0, all = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(corpus)) {
    if (!e.path().filename().string().starts_with("result_")) continue;
    absl::StatusOr<mllog::ParsedLog> full = mllog::ParseFile(e.path().string());
    ASSERT_TRUE(full.ok()) << full.status();
    mllog::ParsedLog reduced = *full;
    std::erase_if(reduced.lines, [](const mllog::LogLine& l) { return !ConvergenceReadsLine(l); });
    kept += reduced.lines.size();
    all += full->lines.size();
    for (const char* ruleset : {"3.0.0", "5.0.0"}) {
      for (bool bert_train_samples : {false, true}) {
        const ConvergenceOptions o{.ruleset = ruleset, .bert_train_samples = bert_train_samples};
        absl::StatusOr<RunConvergence> a = ReadRunConvergence(*full, o);
        absl::StatusOr<RunConvergence> b = ReadRunConvergence(reduced, o);
        ASSERT_EQ(a.ok(), b.ok()) << e.path();
        if (!a.ok()) {
          EXPECT_EQ(a.status(), b.status());
          continue;
        }
        EXPECT_EQ(a->converged, b->converged) << e.path();
        EXPECT_EQ(a->epochs, b->epochs) << e.path();
        EXPECT_TRUE(checker::py::Equals(a->global_batch_size, b->global_batch_size));
        EXPECT_TRUE(checker::py::Equals(a->benchmark, b->benchmark));
      }
    }
    ++logs;
  }
  EXPECT_GE(logs, 100);
  EXPECT_LT(kept, all / 2);  // the reduction is worth doing
}

}  // namespace
}  // namespace mlperf::package
