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
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "base/exit_codes.h"
#include "base/flags.h"
#include "base/json.h"
#include "base/version.h"
#include "checker/engine.h"
#include "checker/package/benchmark_score.h"
#include "checker/package/claims_audit.h"
#include "checker/package/rcp_check.h"
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

absl::StatusOr<std::string> ReadText(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open", path.string()));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> SortedSubdirs(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_directory()) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
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
  return mlperf::kExitOk;
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

int main(int argc, char** argv) {
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

  for (const fs::path& system_dir : SortedSubdirs(org / "results")) {
    const std::string system = system_dir.filename().string();
    // The division comes from the system description, not the logs (spec 7.2).
    std::string division;
    absl::StatusOr<std::string> desc_text = ReadText(org / "systems" / (system + ".json"));
    if (desc_text.ok()) {
      absl::StatusOr<Value> desc =
          mlperf::json::Parse(*desc_text, {.encoding = mlperf::json::Encoding::kUtf8});
      if (desc.ok() && desc->Find("division") && desc->Find("division")->is_string()) {
        division = desc->Find("division")->as_string();
      }
    }
    for (const fs::path& dir : SortedSubdirs(system_dir)) {
      const std::string benchmark = dir.filename().string();
      std::vector<std::string> files;
      for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.starts_with("result_") && name.ends_with(".txt"))
          files.push_back(e.path().string());
      }
      std::sort(files.begin(), files.end());

      Value line(mlperf::json::Object{
          {"system", system}, {"benchmark", benchmark}, {"division", division}});
      const absl::StatusOr<pkg::RcpVerdict> rcp =
          pkg::CheckRcpDirectory(files, {.ruleset = ruleset, .pass = pkg::RcpPass::kPruned});
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

      std::vector<pkg::RunTime> runs;
      mlperf::json::Array runs_json;
      for (const std::string& f : files) {
        pkg::RunTime run{.path = f};
        absl::StatusOr<mlperf::mllog::ParsedLog> log = mlperf::mllog::ParseFile(f);
        if (log.ok()) {
          run.compliant = mlperf::checker::CheckLog(*log, *rules, ruleset).compliant();
          absl::StatusOr<double> minutes = pkg::RunMinutes(*log);
          if (minutes.ok()) run.minutes = *minutes;
        }
        runs_json.push_back(Value(mlperf::json::Object{{"file", fs::path(f).filename().string()},
                                                       {"compliant", run.compliant},
                                                       {"minutes", Optional(run.minutes)}}));
        runs.push_back(run);
      }
      line.Set("runs", runs_json);

      std::optional<double> existing;
      if (fs::exists(dir / "scaling.json")) {
        absl::StatusOr<std::string> text = ReadText(dir / "scaling.json");
        if (text.ok()) {
          absl::StatusOr<double> f = pkg::ParseScalingJson(*text, (dir / "scaling.json").string());
          if (f.ok()) existing = *f;
        }
      }
      // package_checker runs the RCP check only for closed division and
      // benchmarks the ruleset allows (and never where the metadata says so).
      const mlperf::meta::BenchmarkMeta* known = mlperf::meta::FindBenchmark(benchmark);
      const bool rcp_runs = division == "closed" && (!known || known->rcp_checked) &&
                            std::find(allowed.begin(), allowed.end(), benchmark) != allowed.end();
      const double factor =
          pkg::SummarizerScalingFactor(scaling_source, existing, rcp_runs ? &rcp : nullptr);
      const pkg::BenchmarkScore score = pkg::ScoreBenchmark(benchmark, runs, factor);
      line.Set("existing_scaling_factor", Optional(existing));
      line.Set("scaling_factor", score.scaling_factor);
      line.Set("dropped_runs", score.dropped_runs);
      line.Set("olympic_mean", Optional(score.olympic_mean));
      line.Set("score", Optional(score.score));
      std::puts(mlperf::json::Dump(line).c_str());

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
  if (claims_path.empty()) return mlperf::kExitOk;
  absl::StatusOr<std::string> text = ReadText(claims_path);
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
  return mlperf::kExitOk;
}
