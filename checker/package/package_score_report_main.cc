// package_score_report: for every results/<system>/<benchmark> directory of
// one organisation's submission, prints one JSON line with the RCP verdict,
// the scaling factor and the score the official result summarizer would
// report; optionally audits published time-to-train claims against them.
// It reads the submission and never writes into it.
//
// This is the driver of the differential test against the official tools
// (tests/checker/package/run_differential.py); compliance_check will take
// these functions over in its package mode.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "base/exit_codes.h"
#include "base/flags.h"
#include "base/json.h"
#include "base/output.h"
#include "base/version.h"
#include "checker/engine.h"
#include "checker/package/benchmark_score.h"
#include "checker/package/claims_audit.h"
#include "checker/package/layout.h"
#include "checker/package/rcp_check.h"
#include "checker/package/rcp_convergence.h"
#include "checker/package/run_score.h"
#include "checker/rule_library.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

ABSL_FLAG(std::string, ruleset, "", "training ruleset of the submission, e.g. 3.0.0 (required)");
ABSL_FLAG(std::string, scaling, "after-package-checker",
          "which scaling.json the score uses: 'after-package-checker' (the official order: "
          "package_checker, then result_summarizer) or 'existing' (the files as they are now)");
ABSL_FLAG(std::string, claims, "",
          "CSV of published scores to audit (version,submitter,system,benchmark,minutes)");
ABSL_FLAG(bool, rcp_tables, false, "print the RCP statistics of every embedded table instead");

namespace fs = std::filesystem;
using mlperf::json::Value;
namespace pkg = mlperf::package;
namespace mllog = mlperf::mllog;

namespace {

Value Optional(const std::optional<double>& v) { return v ? Value(*v) : Value(); }

Value RecordJson(const pkg::RcpRecord& r) {
  return Value(mlperf::json::Object{{"name", r.name},
                                    {"global_batch_size", r.global_batch_size},
                                    {"mean", r.mean},
                                    {"stdev", r.stdev},
                                    {"min_epochs", r.min_epochs},
                                    {"max_speedup", r.max_speedup}});
}

// Errors that make the exit status 2: each is printed once on stderr.
struct InputErrors {
  int count = 0;
  void Add(const std::string& message) {
    ++count;
    std::fprintf(stderr, "package_score_report: %s\n", message.substr(0, 500).c_str());
  }
};

// The sub-folders of `dir`, sorted (ListDir sorts). An entry that cannot be
// examined (a link that loops) is an error, as in compliance_check, never
// skipped.
absl::StatusOr<std::vector<std::string>> SortedSubdirs(const fs::path& dir, InputErrors& errors) {
  absl::StatusOr<std::vector<pkg::DirEntry>> entries = pkg::ListDir(dir);
  if (!entries.ok()) return entries.status();
  std::vector<std::string> out;
  for (const pkg::DirEntry& e : *entries) {
    if (!e.error.empty()) errors.Add(fmt::format("{}: {}", (dir / e.name).string(), e.error));
    if (e.is_dir) out.push_back(e.name);
  }
  return out;
}

// The division, from the system description (spec 7.2); "" and an error
// when it cannot be read: the score would silently change without it.
std::string ReadDivision(const fs::path& path, InputErrors& errors) {
  absl::StatusOr<std::string> text = pkg::ReadFileLimited(path, pkg::kMaxSystemDescBytes);
  absl::StatusOr<Value> desc =
      text.ok() ? mlperf::json::Parse(*text, {.encoding = mlperf::json::Encoding::kUtf8})
                : absl::StatusOr<Value>(text.status());
  if (!desc.ok()) {
    errors.Add(fmt::format("system description: {}{}", text.ok() ? path.string() + ": " : "",
                           std::string(desc.status().message())));
    return "";
  }
  const Value* division = desc->is_object() ? desc->Find("division") : nullptr;
  if (division == nullptr || !division->is_string()) {
    errors.Add(fmt::format("{}: no division (text) in the system description", path.string()));
    return "";
  }
  return division->as_string();
}

// Exit 2 when an input could not be read or stdout lost a line.
int Finish(const InputErrors& errors) {
  if (absl::Status s = mlperf::base::FinishStdout(); !s.ok()) {
    std::fprintf(stderr, "package_score_report: %s\n", std::string(s.message()).c_str());
    return mlperf::kExitUsage;
  }
  return errors.count > 0 ? mlperf::kExitUsage : mlperf::kExitOk;
}

int PrintRcpTables() {
  for (const auto& [ruleset, benchmark] : pkg::EmbeddedRcpTables()) {
    absl::StatusOr<pkg::RcpTable> table = pkg::RcpTable::Embedded(ruleset, benchmark);
    Value line(mlperf::json::Object{{"ruleset", ruleset}, {"benchmark", benchmark}});
    if (!table.ok()) {
      line.Set("error", std::string(table.status().message()));
    } else {
      mlperf::json::Array full, pruned;
      for (const pkg::RcpRecord& r : table->full()) full.push_back(RecordJson(r));
      for (const pkg::RcpRecord& r : table->pruned()) pruned.push_back(r.name);
      line.Set("records", full);
      line.Set("pruned", pruned);
    }
    std::puts(mlperf::json::Dump(line).c_str());
  }
  return Finish({});
}

constexpr char kUsage[] =
    "Prints, per benchmark directory of an MLPerf Training submission, the RCP verdict, the "
    "scaling\n"
    "factor and the result summarizer's score as JSON lines.\n"
    "Usage: package_score_report --ruleset=3.0.0 [--claims=FILE.csv] <org_folder>\n"
    "       package_score_report --rcp_tables\n"
    "       package_score_report --help | --version\n"
    "\n"
    "Flags:\n";
constexpr std::string_view kFlags[] = {"ruleset", "scaling", "claims", "rcp_tables"};

}  // namespace

namespace {

int Main(int argc, char** argv) {
  absl::StatusOr<mlperf::base::ParsedArgs> args =
      mlperf::base::ParseFlags(argc, argv, kFlags, /*allow_positional=*/true);
  if (!args.ok()) {
    std::fprintf(stderr, "package_score_report: %s\n",
                 std::string(args.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  if (args->help) {
    std::printf("%s%s", kUsage, mlperf::base::FlagsHelp(kFlags).c_str());
    return mlperf::kExitOk;
  }
  if (args->version) {
    std::fputs(mlperf::base::VersionLine("package_score_report").c_str(), stdout);
    return mlperf::kExitOk;
  }
  if (absl::GetFlag(FLAGS_rcp_tables)) return PrintRcpTables();
  const std::string ruleset = absl::GetFlag(FLAGS_ruleset);
  const std::string scaling_flag = absl::GetFlag(FLAGS_scaling);
  if (args->positional.size() != 1 || ruleset.empty() ||
      (scaling_flag != "after-package-checker" && scaling_flag != "existing")) {
    std::fprintf(
        stderr,
        "usage: package_score_report --ruleset=X.Y.Z [--scaling=...] <org_folder> (see --help)\n");
    return mlperf::kExitUsage;
  }
  const pkg::ScalingSource scaling_source = scaling_flag == "existing"
                                                ? pkg::ScalingSource::kExistingFile
                                                : pkg::ScalingSource::kAfterPackageChecker;
  const fs::path org = fs::path(args->positional[0]);
  absl::StatusOr<mlperf::checker::RuleLibrary> rules = mlperf::checker::RuleLibrary::Embedded();
  if (!rules.ok()) {
    std::fprintf(stderr, "%s\n", std::string(rules.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  const std::vector<std::string> allowed = mlperf::meta::AllowedBenchmarks(ruleset);
  std::map<std::pair<std::string, std::string>, pkg::ComputedScore> computed;

  InputErrors errors;
  absl::StatusOr<std::vector<std::string>> systems = SortedSubdirs(org / "results", errors);
  if (!systems.ok()) {
    errors.Add(std::string(systems.status().message()));
    return mlperf::kExitUsage;
  }
  for (const std::string& system : *systems) {
    const fs::path system_dir = org / "results" / system;
    const std::string division = ReadDivision(org / "systems" / (system + ".json"), errors);
    absl::StatusOr<std::vector<std::string>> benchmarks = SortedSubdirs(system_dir, errors);
    if (!benchmarks.ok()) {
      errors.Add(std::string(benchmarks.status().message()));
      continue;
    }
    for (const std::string& benchmark : *benchmarks) {
      const fs::path dir = system_dir / benchmark;
      Value line(mlperf::json::Object{
          {"system", system}, {"benchmark", benchmark}, {"division", division}});
      // Each log read once, with compliance_check's guards (regular files of
      // a bounded size), and reduced to what the RCP comparison reads.
      absl::StatusOr<std::vector<pkg::DirEntry>> entries = pkg::ListDir(dir);
      if (!entries.ok()) errors.Add(std::string(entries.status().message()));
      std::vector<mllog::ParsedLog> logs;
      std::vector<pkg::RunTime> runs;
      mlperf::json::Array runs_json;
      bool all_read = true;
      for (const pkg::DirEntry& e : entries.ok() ? *entries : std::vector<pkg::DirEntry>{}) {
        if (!pkg::IsResultLogName(e.name)) continue;
        const fs::path f = dir / e.name;
        pkg::RunTime run{.path = f.string()};
        absl::StatusOr<mllog::ParsedLog> log = pkg::ParseResultLog(f);
        if (!log.ok()) {
          errors.Add(std::string(log.status().message()));
          all_read = false;
        } else {
          run.compliant = mlperf::checker::CheckLog(*log, *rules, ruleset).compliant();
          // As in compliance_check: a negative time to train fails the run.
          absl::StatusOr<double> minutes = pkg::RunMinutes(*log);
          if (minutes.ok()) run.minutes = *minutes;
          if (minutes.status().code() == absl::StatusCode::kOutOfRange) run.compliant = false;
          pkg::KeepConvergenceLines(*log);
          logs.push_back(*std::move(log));
        }
        runs_json.push_back(Value(mlperf::json::Object{
            {"file", e.name}, {"compliant", run.compliant}, {"minutes", Optional(run.minutes)}}));
        runs.push_back(run);
      }
      const absl::StatusOr<pkg::RcpVerdict> rcp =
          all_read ? pkg::CheckRcpLogs(logs, {.ruleset = ruleset, .pass = pkg::RcpPass::kPruned})
                   : absl::StatusOr<pkg::RcpVerdict>(
                         absl::InvalidArgumentError("a result log could not be read"));
      Value rcp_json(mlperf::json::Object{});
      if (!rcp.ok()) {
        rcp_json.Set("error", std::string(rcp.status().message()));
      } else {
        rcp_json.Set("passed", rcp->passed);
        rcp_json.Set("message", rcp->message);
        rcp_json.Set("normalization_factor", rcp->normalization_factor);
        rcp_json.Set("compared", rcp->compared);
        rcp_json.Set("scaling_factor_written", Optional(rcp->scaling_factor_written));
        rcp_json.Set("submission_mean", Optional(rcp->submission_mean));
        rcp_json.Set("global_batch_size", rcp->global_batch_size);
        rcp_json.Set("record", rcp->record ? RecordJson(*rcp->record) : Value());
      }
      line.Set("rcp", rcp_json);
      line.Set("runs", runs_json);

      std::optional<double> existing;
      std::error_code ec;
      if (const fs::path scaling = dir / "scaling.json"; std::filesystem::exists(scaling, ec)) {
        absl::StatusOr<std::string> text = pkg::ReadFileLimited(scaling, 1 << 20);
        absl::StatusOr<double> f = text.ok() ? pkg::ParseScalingJson(*text, scaling.string())
                                             : absl::StatusOr<double>(text.status());
        if (f.ok()) existing = *f;
      }
      // package_checker runs the RCP check only for closed division, the
      // rulesets its RCP checker knows (1.0.0 on), and benchmarks the ruleset
      // allows (and never where the metadata says so).
      const mlperf::meta::BenchmarkMeta* known = mlperf::meta::FindBenchmark(benchmark);
      const bool rcp_runs = division == "closed" && pkg::RcpCheckerSupportsRuleset(ruleset) &&
                            (!known || known->rcp_checked) &&
                            std::find(allowed.begin(), allowed.end(), benchmark) != allowed.end();
      const double factor =
          pkg::SummarizerScalingFactor(scaling_source, existing, rcp_runs ? &rcp : nullptr);
      const pkg::BenchmarkScore score = pkg::ScoreBenchmark(benchmark, runs, factor);
      line.Set("existing_scaling_factor", Optional(existing));
      line.Set("scaling_factor", score.scaling_factor);
      line.Set("dropped_runs", score.dropped_runs);
      line.Set("olympic_mean", Optional(score.olympic_mean));
      line.Set("score", Optional(score.score));
      std::printf("%s\n", mlperf::json::Dump(line).c_str());

      pkg::ComputedScore& c = computed[{system, benchmark}];
      c.olympic_mean = score.olympic_mean;
      c.normalized = score.score;
      c.scaling_factor = score.scaling_factor;
      if (!score.score) {
        c.unavailable = fmt::format("{} of {} runs dropped (at most {} allowed)",
                                    score.dropped_runs, runs.size(), score.max_dropped);
      }
    }
  }

  const std::string claims_path = absl::GetFlag(FLAGS_claims);
  if (claims_path.empty()) return Finish(errors);
  absl::StatusOr<std::string> text = pkg::ReadFileLimited(claims_path, 64 << 20);
  if (!text.ok()) {
    std::fprintf(stderr, "%s\n", std::string(text.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  absl::StatusOr<std::vector<pkg::Claim>> claims = pkg::ParseClaimsCsv(*text, claims_path);
  if (!claims.ok()) {
    std::fprintf(stderr, "%s\n", std::string(claims.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  const std::string round = ruleset.substr(0, 3);
  const std::string submitter = fs::absolute(org).lexically_normal().filename().string();
  for (const pkg::Claim& claim : *claims) {
    if (claim.version != round || claim.submitter != submitter) continue;
    pkg::ComputedScore c;
    auto it = computed.find({claim.system, claim.benchmark});
    if (it != computed.end()) {
      c = it->second;
    } else {
      c.unavailable = fmt::format("no directory results/{}/{}", claim.system, claim.benchmark);
    }
    const pkg::ClaimAudit a = pkg::AuditClaim(claim, c);
    Value line(mlperf::json::Object{{"claim_system", claim.system},
                                    {"claim_benchmark", claim.benchmark},
                                    {"claim_minutes", claim.minutes},
                                    {"match", std::string(pkg::ClaimMatchName(a.match))},
                                    {"difference", Optional(a.difference)},
                                    {"olympic_mean", Optional(c.olympic_mean)},
                                    {"normalized", Optional(c.normalized)},
                                    {"reason", a.reason}});
    std::puts(mlperf::json::Dump(line).c_str());
  }
  return Finish(errors);
}

}  // namespace

int main(int argc, char** argv) {
  return mlperf::base::RunTool("package_score_report", [&] { return Main(argc, argv); });
}
