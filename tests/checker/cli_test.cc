// The compliance_check command line: exit codes, flags and the JSON shape.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "base/json.h"
#include "fmt/format.h"
#include "gtest/gtest.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int exit_code = -1;
  std::string out;
};

// stdout_to: where the tool's stdout goes instead of the result (its stderr
// is still captured). A run that hangs is stopped after two minutes (exit 124).
Result RunCli(const std::string& args, const std::string& stdout_to = "") {
  Result r;
  const std::string tool = absl::StrCat("timeout 120 ", COMPLIANCE_CHECK_BIN, " ", args);
  const std::string cmd =
      stdout_to.empty() ? absl::StrCat(tool, " 2>&1") : absl::StrCat(tool, " 2>&1 >", stdout_to);
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string Resnet() {
  return (fs::path(MLPERF_CORPUS_DIR) / "v3.0/NVIDIA/results/dgxh100_ngc23.04_mxnet/resnet")
      .string();
}

std::string WriteTemp(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / absl::StrCat("cc_cli_", ::getpid(), "_", name);
  std::ofstream(p) << text;
  return p.string();
}

TEST(CliTest, UsageErrorsExitWithTwo) {
  EXPECT_EQ(RunCli("").exit_code, 2);
  EXPECT_EQ(RunCli("--frobnicate x.txt").exit_code, 2);
  EXPECT_EQ(RunCli("/nonexistent/result_0.txt").exit_code, 2);
  EXPECT_EQ(RunCli("--jobs=abc x.txt").exit_code, 2);
  EXPECT_EQ(RunCli("--ruleset").exit_code, 2);
  Result unknown = RunCli("--ruleset 9.9.9 x.txt");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.out.find("known training rulesets: 0.7.0, 1.0.0, 1.1.0"), std::string::npos)
      << unknown.out;
  EXPECT_NE(unknown.out.find("6.1.0"), std::string::npos);
  // An empty folder of our own: /tmp itself may hold real packages.
  const fs::path empty = fs::temp_directory_path() / fmt::format("cli_test_empty_{}", getpid());
  fs::create_directories(empty);
  Result dir = RunCli(empty.string());
  fs::remove(empty);
  EXPECT_EQ(dir.exit_code, 2);
  EXPECT_NE(dir.out.find("is a directory"), std::string::npos) << dir.out;
  Result help = RunCli("--help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--ruleset"), std::string::npos);
}

TEST(CliTest, VersionNamesTheOfficialReleaseItMatches) {
  std::ifstream pin("quality_targets/official_release.txt");
  std::string release;
  pin >> release;
  ASSERT_FALSE(release.empty());
  const Result v = RunCli("--version");
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_TRUE(v.out.starts_with("compliance_check 0.")) << v.out;
  EXPECT_NE(v.out.find("mlperf-logging " + release), std::string::npos) << v.out;
}

// A result "log" that is a directory or a FIFO is refused by name, never
// skipped: the package would otherwise be scored on the other runs and pass.
TEST(CliTest, ResultLogThatIsNoRegularFileFailsThePackage) {
  const fs::path org = fs::temp_directory_path() / fmt::format("cli_test_nonregular_{}", getpid());
  fs::remove_all(org);
  fs::copy(fs::path(MLPERF_CORPUS_DIR) / "v3.0/NVIDIA", org, fs::copy_options::recursive);
  const fs::path log = org / "results/dgxh100_ngc23.04_mxnet/resnet/result_4.txt";
  for (const char* kind : {"directory", "fifo"}) {
    fs::remove_all(log);
    if (std::string(kind) == "directory") {
      fs::create_directory(log);
    } else {
      ASSERT_EQ(mkfifo(log.c_str(), 0600), 0);
    }
    const Result r = RunCli("--ruleset 3.0.0 " + org.string());
    EXPECT_EQ(r.exit_code, 2) << kind << ": " << r.out;
    EXPECT_FALSE(r.out.starts_with("PASS")) << kind << ": " << r.out;
    EXPECT_NE(r.out.find(log.string() + ": not a regular file"), std::string::npos)
        << kind << ": " << r.out;
  }
  fs::remove_all(org);
}

// A single log given as a named FIFO (or a device) is refused by name at
// once instead of waiting for a writer; a stream the caller holds open (bash
// process substitution) is still read.
TEST(CliTest, SingleLogThatIsNoRegularFileIsRefusedNotAwaited) {
  const fs::path fifo = fs::temp_directory_path() / fmt::format("cli_test_fifo_{}.txt", getpid());
  fs::remove(fifo);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  Result r = RunCli("--ruleset 3.0.0 " + fifo.string());
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(r.out, "compliance_check: " + fifo.string() + ": not a regular file\n");
  fs::remove(fifo);
  r = RunCli("--ruleset 3.0.0 /dev/null");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("/dev/null: not a regular file"), std::string::npos) << r.out;

  const fs::path log = fs::path(MLPERF_CORPUS_DIR) /
                       "v3.0/NVIDIA/results/dgxh100_ngc23.04_mxnet/resnet/result_0.txt";
  const std::string cmd = absl::StrCat("timeout 120 bash -c '", COMPLIANCE_CHECK_BIN,
                                       " --ruleset 3.0.0 <(cat ", log.string(), ")' 2>&1");
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[4096];
  std::string out;
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  EXPECT_TRUE(out.starts_with("PASS")) << out;
}

// What is not checked, or checked other than the package says, is visible:
// an empty package, a --ruleset other than the round folder's, system
// description values the summarizer cannot use, a negative time to train.
TEST(CliTest, NothingUncheckedPassesSilently) {
  const fs::path root = fs::temp_directory_path() / fmt::format("cli_test_unchecked_{}", getpid());
  fs::remove_all(root);
  const fs::path empty = root / "empty_org";
  fs::create_directories(empty / "results");
  fs::create_directories(empty / "systems");
  Result r = RunCli("--ruleset 4.0.0 " + empty.string());
  EXPECT_NE(r.out.find("warning: no benchmark results were found to check"), std::string::npos)
      << r.out;

  const fs::path org = root / "v3.0" / "NVIDIA";
  fs::create_directories(org.parent_path());
  fs::copy(fs::path(MLPERF_CORPUS_DIR) / "v3.0/NVIDIA", org, fs::copy_options::recursive);
  r = RunCli(org.string());
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("round folder"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("not a whole number"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("run_stop is logged"), std::string::npos) << r.out;
  r = RunCli("--ruleset 3.1.0 " + org.string());
  EXPECT_NE(r.out.find("warning: checked under ruleset 3.1.0 as --ruleset asks, but the round "
                       "folder in its path says 3.0.0"),
            std::string::npos)
      << r.out;

  const fs::path desc = org / "systems/dgxh100_ngc23.04_mxnet.json";
  absl::StatusOr<mlperf::json::Value> d = mlperf::json::Parse(
      std::string(std::istreambuf_iterator<char>(std::ifstream(desc).rdbuf()), {}));
  ASSERT_TRUE(d.ok());
  for (mlperf::json::Member& m : d->as_object()) {
    if (m.first == "number_of_nodes") m.second = mlperf::json::Value("two");
    if (m.first == "cooling") m.second = mlperf::json::Value(mlperf::json::Array{});
  }
  std::ofstream(desc) << mlperf::json::Dump(*d);
  const fs::path log = org / "results/dgxh100_ngc23.04_mxnet/resnet/result_0.txt";
  std::string text(std::istreambuf_iterator<char>(std::ifstream(log).rdbuf()), {});
  const size_t stop = text.find("\"key\": \"run_stop\"");
  ASSERT_NE(stop, std::string::npos);
  const size_t ts = text.rfind("\"time_ms\": ", stop) + 11;
  text.replace(ts, text.find(',', ts) - ts, "1000");  // long before run_start
  std::ofstream(log) << text;
  r = RunCli(org.string());
  EXPECT_NE(r.out.find("number_of_nodes is \"two\", not a whole number"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("cooling is [], not text"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("run_stop is logged 28056482.170 minutes before run_start: a time to train "
                       "cannot be negative"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.exit_code, 1) << r.out;
  fs::remove_all(root);
}

// Outputs never destroy inputs: --csv inside the checked tree is refused
// before anything is written; an unwritable --csv or stdout is exit 2.
TEST(CliTest, OutputsNeverOverwriteInputsAndWriteErrorsAreExitTwo) {
  const fs::path org = fs::temp_directory_path() / fmt::format("cli_test_outputs_{}", getpid());
  fs::remove_all(org);
  fs::copy(fs::path(MLPERF_CORPUS_DIR) / "v3.0/NVIDIA", org, fs::copy_options::recursive);
  const fs::path log = org / "results/dgxh100_ngc23.04_mxnet/resnet/result_0.txt";
  std::ifstream before_in(log, std::ios::binary);
  const std::string before((std::istreambuf_iterator<char>(before_in)), {});
  for (const std::string& target : {log.string(), (org / "summary.csv").string()}) {
    const Result r = RunCli("--ruleset 3.0.0 --csv " + target + " " + org.string());
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("lies inside the input " + org.string()), std::string::npos) << r.out;
  }
  // The same log given as a file, and --csv naming it: package options on
  // single logs are refused.
  const Result single = RunCli("--ruleset 3.0.0 --csv " + log.string() + " " + log.string());
  EXPECT_EQ(single.exit_code, 2) << single.out;
  EXPECT_NE(single.out.find("--csv applies to package folders"), std::string::npos) << single.out;
  std::ifstream after_in(log, std::ios::binary);
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after_in)), {}), before);
  EXPECT_FALSE(fs::exists(org / "summary.csv"));

  const Result missing_dir =
      RunCli("--ruleset 3.0.0 --csv /nonexistent_dir_for_test/s.csv " + org.string());
  EXPECT_EQ(missing_dir.exit_code, 2) << missing_dir.out;
  EXPECT_NE(missing_dir.out.find("--csv=/nonexistent_dir_for_test/s.csv: no folder"),
            std::string::npos)
      << missing_dir.out;
  // A full device (a node made here, never /dev's own) as stdout.
  const fs::path full_node = org.parent_path() / fmt::format("cli_test_full_{}", getpid());
  if (mknod(full_node.c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0) {
    const Result full = RunCli("--ruleset 3.0.0 " + org.string(), full_node.string());
    EXPECT_EQ(full.exit_code, 2) << full.out;
    EXPECT_NE(full.out.find("standard output failed"), std::string::npos) << full.out;
    const Result full_log = RunCli("--ruleset 3.0.0 " + log.string(), full_node.string());
    EXPECT_EQ(full_log.exit_code, 2) << full_log.out;
    fs::remove(full_node);
  }
  fs::remove_all(org);
}

// --html: written atomically where it points, never into the checked tree or
// over an input, and a write error is exit 2 with no partial file.
TEST(CliTest, HtmlReportIsWrittenOnlyWhereItPointsAndWhole) {
  const fs::path dir = fs::temp_directory_path() / fmt::format("cli_test_html_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path html = dir / "report.html";
  const Result ok = RunCli("--ruleset 3.0.0 --html " + html.string() + " " + Resnet());
  EXPECT_EQ(ok.exit_code, 0) << ok.out;
  std::ifstream in(html, std::ios::binary);
  const std::string page((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(page.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(page.find("</html>"), std::string::npos);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);

  // Over an existing report: replaced whole; a read-only folder: exit 2, no file.
  EXPECT_EQ(RunCli("--ruleset 3.0.0 --html " + html.string() + " " + Resnet()).exit_code, 0);
  const fs::path locked = dir / "locked";
  fs::create_directories(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  const bool root = ::geteuid() == 0;  // root writes anyway; then use a missing folder
  const fs::path bad = root ? dir / "missing" / "r.html" : locked / "r.html";
  const Result unwritable =
      RunCli("--ruleset 3.0.0 --html " + bad.string() + " " + Resnet(), "/dev/null");
  EXPECT_EQ(unwritable.exit_code, 2) << unwritable.out;
  EXPECT_NE(unwritable.out.find("--html"), std::string::npos) << unwritable.out;
  EXPECT_EQ(std::count(unwritable.out.begin(), unwritable.out.end(), '\n'), 1) << unwritable.out;
  EXPECT_TRUE(fs::is_empty(locked));
  fs::permissions(locked, fs::perms::owner_all);

  // Into the checked tree, or over the log being checked: refused before anything.
  const std::string log = Resnet() + "/result_0.txt";
  for (const std::string& target : {log, Resnet() + "/report.html"}) {
    const Result r = RunCli("--ruleset 3.0.0 --html " + target + " " + Resnet());
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_NE(r.out.find("lies inside the input " + Resnet()), std::string::npos) << r.out;
  }
  const Result single = RunCli("--ruleset 3.0.0 --html " + log + " " + log);
  EXPECT_EQ(single.exit_code, 2) << single.out;
  EXPECT_FALSE(fs::exists(Resnet() + "/report.html"));

  // Plain log files get a report too.
  const fs::path logs_html = dir / "logs.html";
  const Result logs = RunCli("--ruleset 3.0.0 --html " + logs_html.string() + " " + log);
  EXPECT_EQ(logs.exit_code, 0) << logs.out;
  EXPECT_TRUE(fs::exists(logs_html));
  fs::remove_all(dir);
}

TEST(CliTest, VerdictsAndExitCodes) {
  const std::string bad = WriteTemp(
      "bad.txt", ":::MLLOG {\"key\": \"x\", \"value\": 1, \"metadata\": {}, \"time_ms\": 0}\n");
  Result fail = RunCli(absl::StrCat("--ruleset 3.0.0 ", bad));
  EXPECT_EQ(fail.exit_code, 1);
  EXPECT_EQ(fail.out.rfind("FAIL  ", 0), 0u) << fail.out;
  if (!fs::exists(Resnet())) GTEST_SKIP() << "no corpus";
  Result pass = RunCli(
      absl::StrCat("--ruleset=3.0.0 ", Resnet(), "/result_0.txt ", Resnet(), "/result_1.txt"));
  EXPECT_EQ(pass.exit_code, 0) << pass.out;
  EXPECT_EQ(pass.out.rfind("PASS  ", 0), 0u);
  // The default ruleset is the newest: a 3.0 resnet log is not a 6.1.0 benchmark.
  EXPECT_EQ(RunCli(Resnet() + "/result_0.txt").exit_code, 1);
  EXPECT_EQ(RunCli(absl::StrCat("--ruleset 3.0.0 ", Resnet(), "/result_0.txt ", bad)).exit_code, 1);
  fs::remove(bad);
}

TEST(CliTest, JsonShape) {
  const std::string bad =
      WriteTemp("bad2.txt",
                ":::MLLOG {\"key\": \"submission_division\", \"value\": \"closed\", "
                "\"metadata\": {}, \"time_ms\": 0}\nnot json\n");
  Result r = RunCli(absl::StrCat("--json --ruleset 3.0.0 ", bad));
  EXPECT_EQ(r.exit_code, 1);
  absl::StatusOr<mlperf::json::Value> doc = mlperf::json::Parse(r.out);
  ASSERT_TRUE(doc.ok()) << r.out;
  EXPECT_EQ(doc->Find("tool")->as_string(), "compliance_check");
  EXPECT_EQ(doc->Find("ruleset")->as_string(), "3.0.0");
  EXPECT_EQ(doc->Find("verdict")->as_string(), "FAIL");
  const auto& logs = doc->Find("logs")->as_array();
  ASSERT_EQ(logs.size(), 1u);
  const mlperf::json::Value& log = logs[0];
  EXPECT_EQ(log.Find("path")->as_string(), bad);
  EXPECT_EQ(log.Find("division")->as_string(), "closed");
  EXPECT_TRUE(log.Find("benchmark")->is_null());
  EXPECT_EQ(log.Find("verdict")->as_string(), "FAIL");
  ASSERT_FALSE(log.Find("errors")->as_array().empty());
  for (const auto& e : log.Find("errors")->as_array()) {
    for (const char* field : {"key", "line", "file_line", "message"})
      EXPECT_NE(e.Find(field), nullptr) << field;
    EXPECT_TRUE(e.Find("message")->is_string());
  }
  EXPECT_TRUE(log.Find("warnings")->is_array());
  fs::remove(bad);
}

}  // namespace
