// Whole-package checking: everything the official package checker checks
// for one organisation folder (spec 7.2: layout and file names, every result
// log through the per-log rules, the number of runs and the olympic
// allowance, system descriptions, seeds, package_checker_params, RCPs, power
// logs), plus the result summarizer's scores (spec 8) and reviewer warnings.
// It reads the tree and never writes into it (see WriteScalingFiles).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "base/json.h"
#include "checker/engine.h"
#include "checker/package/benchmark_score.h"
#include "checker/package/convergence_curve.h"
#include "checker/package/rcp_check.h"
#include "checker/package/system_desc.h"
#include "checker/report.h"
#include "checker/rule_library.h"

namespace mlperf::package {

struct PackageOptions {
  std::string ruleset;
  std::optional<std::string> folder_ruleset;  // what a vN.M round folder in the path says
  bool rcp_bypass = false;                    // --rcp-bypass: for every directory
  bool seed_checker_bypass = false;           // --seed-checker-bypass
  bool werror = false;                        // per-log warnings fail the run (official --werror)
  ScalingSource scaling = ScalingSource::kAfterPackageChecker;
  int jobs = 0;  // threads for the logs; 0: one per core
  // Parts of the organisation to check (a results/<system>[/<benchmark>]
  // path on the command line); unset: all.
  std::optional<std::string> only_system;
  std::optional<std::string> only_benchmark;
  // What only the HTML report shows: convergence curves, quality targets and
  // the RCP pruning note (costs a little time, so only on request).
  bool report_details = false;
};

struct RunDetail {
  std::string path;
  std::string stem;               // "result_3"
  checker::LogReport log;         // the per-log verdict (official compliance checker)
  bool compliant = false;         // for the package verdict (warnings count with --werror)
  std::optional<double> minutes;  // run_start to run_stop (summarizer)
  std::string minutes_error;
  std::optional<double> rcp_epochs;    // convergence as the RCP checker reads it
  std::optional<double> run_start_ms;  // the first run_start's time_ms
  std::vector<std::string> seeds;      // the seed values the run logs
  // The first value of each submission_* key logged before run_start (what
  // the description notes compare), bounded.
  std::map<std::string, json::Value> settings;
  // Every other scalar key logged before run_start (hyperparameters,
  // precision and seed keys; the first value of each), bounded, and
  // train_samples and eval_samples wherever they are logged.
  std::map<std::string, json::Value> hyperparameters;
  std::optional<double> run_stop_ms;  // the last run_stop's time_ms
  std::string run_status;             // its metadata status ("success", "aborted")
  RunCurves curves;                   // with PackageOptions::report_details
};

struct BenchmarkDirReport {
  std::string path, system, benchmark, division;  // for display (\xNN for non-UTF-8 bytes)
  std::filesystem::path location;                 // the directory itself
  bool skipped = false;  // a folder name the ruleset does not allow (official: skipped)
  std::optional<int> required_runs;
  std::vector<RunDetail> runs;  // sorted by path
  int failed_runs = 0;          // the official error_set: non-compliant or failing power
  bool rcp_bypass = false, seed_checker_bypass = false;  // as applied
  bool rcp_ran = false;
  std::optional<RcpVerdict> rcp;
  std::string rcp_error;  // where the official RCP checker raises
  bool seed_check_ran = false;
  std::optional<double> existing_scaling_factor;
  BenchmarkScore score;
  std::optional<double> energy;     // the summarizer's Energy, where power/ exists (power_energy.h)
  std::vector<std::string> errors;  // each fails the package (official ERROR lines)
  std::vector<std::string> warnings;         // official WARNING lines (our wording)
  std::vector<std::string> review_warnings;  // ours; never change the verdict
  // With PackageOptions::report_details:
  std::vector<QualityTarget> targets;
  std::optional<PruningNote> pruning_note;

  bool passed() const { return errors.empty(); }
  int converged_runs() const;
};

struct SystemReport {
  std::string name;  // results/<system> folder name
  bool desc_loaded = false;
  json::Value desc;
  SystemDescCheck check;
  std::string error;  // missing or unparsable systems/<system>.json
  // results/<system>/privateid.json's "private_id", as the summarizer reads
  // it; a file that does not parse makes the summarizer skip the system.
  std::string private_id;
  bool private_id_unreadable = false;
};

struct OrgReport {
  std::string path, name, ruleset;
  std::vector<SystemReport> systems;
  std::vector<BenchmarkDirReport> dirs;
  std::vector<std::string> errors, warnings;
  // An organisation-level package_checker_params that asks for a bypass the
  // package checker does not apply (spec 7.1).
  std::vector<std::string> notes;
  bool input_error = false;  // something could not be read at all

  bool passed() const;
};

OrgReport CheckOrganization(const std::filesystem::path& org, const checker::RuleLibrary& rules,
                            const PackageOptions& options);

// Whether packages are checked under `ruleset`: a training ruleset with rule
// files and a list of allowed benchmarks (0.7.0, and 1.0.0 on).
bool PackageRulesetSupported(const checker::RuleLibrary& rules, const std::string& ruleset);

// The ruleset `org` is checked under: `given` (--ruleset), else the one its
// vN.M round folder names; an error that says to pass --ruleset otherwise.
absl::StatusOr<std::string> PackageRuleset(const std::filesystem::path& org,
                                           const std::optional<std::string>& given,
                                           const checker::RuleLibrary& rules);

// Whether the package checker runs its seed, RCP and system description
// checks under `ruleset`: the official tools do from 1.0.0 on, the rulesets
// their RCP checker knows; under 0.7.0 a package is its logs and run counts.
bool FullPackageChecks(const std::string& ruleset);

// What the official package checker, then result summarizer, leave as
// scaling.json in each checked directory (HEAD): removed wherever the RCP
// comparison ran, then written with the factor where the run passed faster
// than the RCP mean. Only for --write-scaling.
absl::Status WriteScalingFiles(const OrgReport& report);

}  // namespace mlperf::package
