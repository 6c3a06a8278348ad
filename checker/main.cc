// compliance_check: checks MLPerf Training result logs against the rules of a
// training ruleset, with the verdicts of the official Python checker
// (mlperf_logging.compliance_checker). See docs/compliance_check.md.
//
// Exit codes: 0 every log compliant, 1 some log is not, 2 usage or input error.

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "checker/engine.h"
#include "checker/package/cli_package.h"
#include "checker/report_format.h"
#include "checker/rule_library.h"
#include "logging/mllog_parser.h"

ABSL_FLAG(std::string, ruleset, "6.1.0", "training ruleset to check against, e.g. 3.0.0");
ABSL_FLAG(bool, json, false, "print one JSON document instead of text");
ABSL_FLAG(std::string, rules_dir, "",
          "read rule files from this quality_targets/ directory instead of the built-in ones "
          "(for rule development)");
ABSL_FLAG(bool, werror, false, "treat warnings (duplicated keys with identical values) as errors");
ABSL_FLAG(int, jobs, 0, "logs checked in parallel; 0 = one per CPU core");

namespace {

using mlperf::checker::LogReport;
using mlperf::checker::RuleLibrary;

constexpr int kExitUsage = 2;

constexpr char kUsage[] =
    "Usage: compliance_check [--ruleset X.Y.Z] [--json] [--werror] [--jobs N] [--csv FILE]\n"
    "                        [--claims FILE] [--rcp-bypass] [--seed-checker-bypass] "
    "[--write-scaling] PATH...\n"
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

struct Job {
  std::string path;
  std::string ruleset;
};

void PrintUsage(FILE* out) {
  std::fputs(kUsage, out);
  for (const char* name : {"ruleset", "json", "werror", "jobs", "rules_dir"}) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string dashed = name;
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    std::fprintf(out, "  --%-12s %s (default: %s)\n", dashed.c_str(), flag->Help().c_str(),
                 flag->DefaultValue().empty() ? "none" : flag->DefaultValue().c_str());
  }
  std::fputs(mlperf::package::PackageFlagsHelp().c_str(), out);
}

// Sets flags from argv with our exit codes (Abseil's parser exits with 1 on a
// bad flag, which would read as "not compliant"). Returns the positional args.
absl::StatusOr<std::vector<std::string>> ParseArgs(int argc, char** argv, bool* help) {
  std::vector<std::string> positional;
  bool only_positional = false;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (only_positional || arg.size() < 2 || arg[0] != '-') {
      positional.emplace_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    if (arg == "-h" || arg == "--help" || arg == "-help") {
      *help = true;
      continue;
    }
    absl::ConsumePrefix(&arg, "-");
    absl::ConsumePrefix(&arg, "-");
    std::string name(arg.substr(0, arg.find('=')));
    std::replace(name.begin(), name.end(), '-', '_');
    std::optional<std::string> value;
    if (arg.find('=') != absl::string_view::npos)
      value = std::string(arg.substr(arg.find('=') + 1));
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negated = flag != nullptr && flag->IsOfType<bool>() && !value.has_value();
      if (!negated) flag = nullptr;
    }
    static constexpr const char* kOurs[] = {
        "ruleset", "json",       "rules_dir",           "werror",       "jobs", "csv",
        "claims",  "rcp_bypass", "seed_checker_bypass", "write_scaling"};
    if (flag == nullptr ||
        std::find(std::begin(kOurs), std::end(kOurs), flag->Name()) == std::end(kOurs)) {
      return absl::InvalidArgumentError(absl::StrCat("unknown flag '", argv[i], "' (see --help)"));
    }
    if (!value.has_value()) {
      if (flag->IsOfType<bool>()) {
        value = negated ? "false" : "true";
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag '", argv[i], "' needs a value"));
      }
    }
    std::string error;
    if (!flag->ParseFrom(*value, &error)) {
      return absl::InvalidArgumentError(absl::StrCat("flag '--", flag->Name(), "': ", error));
    }
  }
  return positional;
}

// Turns command-line paths into logs to check. A directory (a whole
// submission package) is where the package mode will plug in.
absl::StatusOr<std::vector<Job>> CollectJobs(const std::vector<std::string>& paths,
                                             const std::string& ruleset) {
  namespace fs = std::filesystem;
  std::vector<Job> jobs;
  for (const std::string& path : paths) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    if (fs::is_directory(st)) {
      return absl::UnimplementedError(
          absl::StrCat(path,
                       ": is a directory; checking whole submission packages is not supported yet, "
                       "pass the result_*.txt files"));
    }
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

int main(int argc, char** argv) {
  bool help = false;
  absl::StatusOr<std::vector<std::string>> paths = ParseArgs(argc, argv, &help);
  if (help) {
    PrintUsage(stdout);
    return 0;
  }
  if (!paths.ok()) {
    std::fprintf(stderr, "compliance_check: %s\n", std::string(paths.status().message()).c_str());
    return kExitUsage;
  }
  if (paths->empty()) {
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
  const std::string ruleset = absl::GetFlag(FLAGS_ruleset);
  if (!rules->HasRuleset(ruleset)) {
    std::fprintf(stderr, "compliance_check: unknown ruleset '%s'; known training rulesets: %s\n",
                 ruleset.c_str(), absl::StrJoin(rules->Rulesets(), ", ").c_str());
    return kExitUsage;
  }

  if (mlperf::package::AnyDirectory(*paths)) {
    return mlperf::package::RunPackageCli(
        *paths,
        {.ruleset = mlperf::package::RulesetGiven(argc, argv) ? std::optional<std::string>(ruleset)
                                                              : std::nullopt,
         .default_ruleset = ruleset,
         .json = absl::GetFlag(FLAGS_json),
         .werror = absl::GetFlag(FLAGS_werror),
         .jobs = absl::GetFlag(FLAGS_jobs)},
        *rules);
  }
  absl::StatusOr<std::vector<Job>> jobs = CollectJobs(*paths, ruleset);
  if (!jobs.ok()) {
    std::fprintf(stderr, "compliance_check: %s\n", std::string(jobs.status().message()).c_str());
    return kExitUsage;
  }

  mlperf::checker::CheckOptions options;
  options.werror = absl::GetFlag(FLAGS_werror);
  std::vector<LogReport> reports(jobs->size());
  int n_threads = absl::GetFlag(FLAGS_jobs);
  if (n_threads <= 0)
    n_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  n_threads = std::min<int>(n_threads, static_cast<int>(jobs->size()));
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < jobs->size(); i = next++)
      reports[i] = CheckOne((*jobs)[i], *rules, options);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < n_threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool) t.join();

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
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (input_error) return kExitUsage;
  return all_pass ? 0 : 1;
}
