// compliance_check: checks MLPerf Training result logs against the rules of a
// training ruleset, with the verdicts of the official Python checker
// (mlperf_logging.compliance_checker). See docs/compliance_check.md.
//
// Exit codes: 0 every log compliant, 1 some log is not, 2 usage or input error.

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/exit_codes.h"
#include "base/flags.h"
#include "base/output.h"
#include "base/parallel_for.h"
#include "base/version.h"
#include "checker/engine.h"
#include "checker/package/cli_package.h"
#include "checker/report_format.h"
#include "checker/rule_library.h"
#include "logging/mllog_parser.h"

ABSL_FLAG(std::string, ruleset, "",
          "training ruleset to check against, e.g. 3.0.0; default: the newest one known");
ABSL_FLAG(bool, json, false, "print one JSON document instead of text");
ABSL_FLAG(std::string, rules_dir, "",
          "read rule files from this quality_targets/ directory instead of the built-in ones "
          "(for rule development)");
ABSL_FLAG(bool, werror, false, "treat warnings (duplicated keys with identical values) as errors");
ABSL_FLAG(int, jobs, 0, "logs checked in parallel; 0 = one per CPU core");

namespace {

using mlperf::kExitFailed;
using mlperf::kExitOk;
using mlperf::kExitUsage;
using mlperf::checker::LogReport;
using mlperf::checker::RuleLibrary;

constexpr char kUsage[] =
    "Usage: compliance_check [--ruleset X.Y.Z] [--json] [--werror] [--jobs N] [--csv FILE]\n"
    "                        [--results-table FILE] [--results-table-json FILE] [--html FILE]\n"
    "                        [--claims FILE] [--rcp-bypass] [--seed-checker-bypass]\n"
    "                        [--write-scaling] PATH...\n"
    "       compliance_check --help | --version\n"
    "\n"
    "Checks MLPerf Training result logs (result_*.txt) for compliance with a training\n"
    "ruleset, giving the same verdict as the official mlperf_logging compliance checker.\n"
    "Each PATH is one result log, or a directory: results/<system>[/<benchmark>], an organisation\n"
    "folder (systems/ and results/) or a folder of organisation folders, checked as a whole "
    "package\n"
    "as the official package checker and result summarizer do. Prints one verdict line per log, "
    "followed by every error\n"
    "and warning with its key, MLLOG line index, file line, rule and the offending line.\n"
    "\n"
    "Exit status: 0 all logs compliant, 1 some log not compliant, 2 usage or input error.\n"
    "\n"
    "Flags:\n";

// Ours, then the package mode's (defined in checker/package/cli_package.cc).
std::vector<std::string_view> FlagNames() {
  std::vector<std::string_view> names = {"ruleset", "json", "werror", "jobs", "rules-dir"};
  names.insert(names.end(), std::begin(mlperf::package::kPackageFlags),
               std::end(mlperf::package::kPackageFlags));
  return names;
}

struct Job {
  std::string path;
  std::string ruleset;
};

void PrintUsage(FILE* out) {
  std::fputs(kUsage, out);
  std::fputs(mlperf::base::FlagsHelp(FlagNames()).c_str(), out);
}

// Whether a path is a stream the caller already holds open (process
// substitution, /dev/stdin): its writer exists, so reading it cannot hang.
bool IsCallersStream(const std::string& path) {
  return path == "/dev/stdin" || path.starts_with("/dev/fd/") || path.starts_with("/proc/self/fd/");
}

// Turns command-line paths into logs to check. Every path is a file or
// missing here: main hands directories to the package mode before. A named
// FIFO, socket or device is refused: reading one may wait for ever.
absl::StatusOr<std::vector<Job>> CollectJobs(const std::vector<std::string>& paths,
                                             const std::string& ruleset) {
  namespace fs = std::filesystem;
  std::vector<Job> jobs;
  for (const std::string& path : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    if (!fs::is_regular_file(st) && !IsCallersStream(path))
      return absl::InvalidArgumentError(absl::StrCat(path, ": not a regular file"));
    jobs.push_back({path, ruleset});
  }
  return jobs;
}

LogReport CheckOne(const Job& job, const RuleLibrary& rules,
                   const mlperf::checker::CheckOptions& options) {
  absl::StatusOr<mlperf::mllog::ParsedLog> log = mlperf::mllog::ParseFile(job.path);
  if (!log.ok()) {
    LogReport r;
    r.path = job.path;
    r.ruleset = job.ruleset;
    r.input_error = true;
    r.errors.push_back({.message = std::string(log.status().message())});
    return r;
  }
  return mlperf::checker::CheckLog(*log, rules, job.ruleset, options);
}

}  // namespace

namespace {

int Main(int argc, char** argv) {
  absl::StatusOr<mlperf::base::ParsedArgs> args =
      mlperf::base::ParseFlags(argc, argv, FlagNames(), /*allow_positional=*/true);
  if (!args.ok()) {
    std::fprintf(stderr, "compliance_check: %s\n", std::string(args.status().message()).c_str());
    return kExitUsage;
  }
  if (args->help) {
    PrintUsage(stdout);
    return kExitOk;
  }
  if (args->version) {
    std::fputs(mlperf::base::VersionLine("compliance_check").c_str(), stdout);
    return kExitOk;
  }
  const std::vector<std::string>& paths = args->positional;
  if (paths.empty()) {
    std::fprintf(stderr, "compliance_check: no log given\n\n");
    PrintUsage(stderr);
    return kExitUsage;
  }

  const std::string rules_dir = absl::GetFlag(FLAGS_rules_dir);
  absl::StatusOr<RuleLibrary> rules =
      rules_dir.empty() ? RuleLibrary::Embedded() : RuleLibrary::FromDirectory(rules_dir);
  if (!rules.ok()) {
    std::fprintf(stderr, "compliance_check: rule files: %s\n",
                 std::string(rules.status().message()).c_str());
    return kExitUsage;
  }
  std::string ruleset = absl::GetFlag(FLAGS_ruleset);
  if (ruleset.empty() && !rules->Rulesets().empty()) ruleset = rules->Rulesets().back();
  if (!rules->HasRuleset(ruleset)) {
    std::fprintf(stderr, "compliance_check: unknown ruleset '%s'; known training rulesets: %s\n",
                 ruleset.c_str(), absl::StrJoin(rules->Rulesets(), ", ").c_str());
    return kExitUsage;
  }

  auto given = [&](std::string_view flag) {
    std::string name(flag);
    std::replace(name.begin(), name.end(), '-', '_');
    return std::find(args->given.begin(), args->given.end(), name) != args->given.end();
  };
  bool log_file_outputs = false;  // package-mode outputs that plain log files have too
  for (std::string_view flag : mlperf::package::kLogFileFlags) log_file_outputs |= given(flag);
  if (mlperf::package::AnyDirectory(paths) || log_file_outputs) {
    const bool ruleset_given =
        std::find(args->given.begin(), args->given.end(), "ruleset") != args->given.end();
    return mlperf::package::RunPackageCli(
        paths,
        {.ruleset = ruleset_given ? std::optional<std::string>(ruleset) : std::nullopt,
         .default_ruleset = ruleset,
         .json = absl::GetFlag(FLAGS_json),
         .werror = absl::GetFlag(FLAGS_werror),
         .jobs = absl::GetFlag(FLAGS_jobs)},
        *rules);
  }
  // Package options on single logs would silently do nothing.
  for (std::string_view flag : mlperf::package::kPackageFlags) {
    if (given(flag)) {
      std::fprintf(stderr,
                   "compliance_check: --%s applies to package folders, and no input is one\n",
                   std::string(flag).c_str());
      return kExitUsage;
    }
  }
  absl::StatusOr<std::vector<Job>> jobs = CollectJobs(paths, ruleset);
  if (!jobs.ok()) {
    std::fprintf(stderr, "compliance_check: %s\n", std::string(jobs.status().message()).c_str());
    return kExitUsage;
  }

  mlperf::checker::CheckOptions options;
  options.werror = absl::GetFlag(FLAGS_werror);
  std::vector<LogReport> reports(jobs->size());
  mlperf::base::ParallelFor(jobs->size(), absl::GetFlag(FLAGS_jobs),
                            [&](size_t i) { reports[i] = CheckOne((*jobs)[i], *rules, options); });

  bool input_error = false, all_pass = true;
  std::string out;
  for (const LogReport& r : reports) {
    input_error = input_error || r.input_error;
    all_pass = all_pass && r.compliant();
  }
  if (absl::GetFlag(FLAGS_json)) {
    out = mlperf::checker::FormatJson(ruleset, reports);
  } else {
    for (const LogReport& r : reports) out += mlperf::checker::FormatHuman(r);
  }
  if (absl::Status s = mlperf::base::WriteStdout(out); !s.ok()) {
    std::fprintf(stderr, "compliance_check: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  if (input_error) return kExitUsage;
  return all_pass ? kExitOk : kExitFailed;
}

}  // namespace

int main(int argc, char** argv) {
  return mlperf::base::RunTool("compliance_check", [&] { return Main(argc, argv); });
}
