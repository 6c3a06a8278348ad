#include "checker/package/package_check.h"

#include <algorithm>
#include <fstream>
#include <set>

#include "base/files.h"
#include "base/parallel_for.h"
#include "checker/package/consistency_notes.h"
#include "checker/package/layout.h"
#include "checker/package/package_params.h"
#include "checker/package/power_check.h"
#include "checker/package/power_energy.h"
#include "checker/package/rcp_convergence.h"
#include "checker/package/rcp_health.h"
#include "checker/package/reviewer_warnings.h"
#include "checker/package/ruleset_guess.h"
#include "checker/package/run_score.h"
#include "checker/package/seed_check.h"
#include "checker/package/seed_notes.h"
#include "checker/package/system_reports.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;

// What a run keeps of its submission_* lines for the description notes.
constexpr size_t kMaxSettings = 16;
constexpr size_t kMaxSettingBytes = 256;
constexpr size_t kMaxHyperparameters = 64;

struct LogTask {
  size_t dir;
  size_t run;
  fs::path path;
};

PackageParams ReadParams(const fs::path& path, std::vector<std::string>& warnings) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  absl::StatusOr<std::string> text = ReadFileLimited(path, kMaxSmallFileBytes);
  if (!text.ok()) {
    warnings.push_back(std::string(text.status().message()));
    return {};
  }
  PackageParams p = ParsePackageParams(*text);
  for (const std::string& r : p.ignored_requests) {
    warnings.push_back(
        fmt::format("{}: the line '{}' is not applied by the official package checker (only a last "
                    "line without a "
                    "final newline is read)",
                    DisplayPath(path), r));
  }
  return p;
}

// The directory checks (seeds, the RCP reader, the benchmark name) read few
// of a log's lines; the rest are freed here, on the thread that parsed them,
// so that a round's logs neither wait in memory nor cross threads to be freed.
void KeepDirectoryLines(mllog::ParsedLog& log) {
  std::erase_if(log.lines, [](const mllog::LogLine& line) {
    return !(line.key_is_string && line.key == "seed") && !ConvergenceReadsLine(line);
  });
  log.lines.shrink_to_fit();
}

// Parses and checks one result log, as the package checker and the
// summarizer each do, and keeps what its directory's checks need.
void CheckRun(const fs::path& path, const std::string& benchmark, const checker::RuleLibrary& rules,
              const PackageOptions& options, RunDetail& run,
              std::optional<mllog::ParsedLog>& parsed, uint64_t& fingerprint,
              std::vector<std::string>& review) {
  run.path = DisplayPath(path);
  run.stem = fs::path(path.filename()).stem().string();
  // Streamed, as the per-log mode reads: no whole-file buffer per log.
  absl::StatusOr<mllog::ParsedLog> log = ParseResultLog(path);
  if (!log.ok()) {
    run.log.path = run.path;
    run.log.ruleset = options.ruleset;
    run.log.input_error = true;
    run.log.errors.push_back({.message = std::string(log.status().message())});
    return;
  }
  parsed = *std::move(log);
  parsed->path = run.path;
  run.log = checker::CheckLog(*parsed, rules, options.ruleset, {.werror = false});
  run.compliant = run.log.compliant() && (!options.werror || run.log.warnings.empty());
  absl::StatusOr<double> minutes = RunMinutes(*parsed);
  if (minutes.ok()) {
    run.minutes = *minutes;
  } else {
    run.minutes_error = std::string(minutes.status().message());
    // A negative time to train fails the run (the official tools score it).
    if (minutes.status().code() == absl::StatusCode::kOutOfRange) {
      run.log.errors.push_back({.key = "run_stop", .message = run.minutes_error});
      run.compliant = false;
    }
  }
  // One pass: the keys logged before the first run_start, the data set sizes
  // wherever they are (many logs give them just after run_start), the last
  // run_stop.
  bool started = false;
  for (const mllog::LogLine& line : parsed->lines) {
    if (line.key == "run_stop") {
      run.run_stop_ms = line.time_ms;
      const json::Value* status = line.metadata.Find("status");
      run.run_status =
          status && status->is_string() ? status->as_string().substr(0, kMaxSettingBytes) : "";
    }
    if ((line.key == "train_samples" || line.key == "eval_samples") && line.value.is_number())
      run.hyperparameters.emplace(line.key, line.value);
    if (!started && line.key == "run_start") {
      run.run_start_ms = line.time_ms;
      started = true;
    }
    if (started) continue;
    const json::Value& v = line.value;
    const bool small =
        v.is_string() ? v.as_string().size() <= kMaxSettingBytes : v.is_number() || v.is_bool();
    if (!line.key_is_string || !small) continue;
    if (line.key.starts_with("submission_")) {
      if (run.settings.size() < kMaxSettings) run.settings.emplace(line.key, v);
    } else if (run.hyperparameters.size() < kMaxHyperparameters) {
      run.hyperparameters.emplace(line.key, v);
    }
  }
  if (options.report_details) run.curves = ExtractCurves(*parsed, benchmark, options.ruleset);
  review = RunWarnings(*parsed);
  fingerprint = BodyFingerprint(*parsed);
  KeepDirectoryLines(*parsed);
}

const SystemReport* FindSystem(const OrgReport& report, const std::string& name) {
  for (const SystemReport& s : report.systems) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// What each log's check leaves for the directory verdict, [dir][run].
struct RunOutputs {
  std::vector<std::vector<std::optional<mllog::ParsedLog>>>
      parsed;                                       // reduced by KeepDirectoryLines
  std::vector<std::vector<uint64_t>> fingerprints;  // BodyFingerprint
  std::vector<std::vector<std::vector<std::string>>> review;
};

// The organisation's name: its folder's, or its parent's for a path ending in '/.'.
std::string OrgName(const fs::path& org) {
  std::error_code ec;
  const fs::path normal = fs::absolute(org, ec).lexically_normal();
  std::string name = DisplayName(normal.filename().string());
  if (name.empty()) name = DisplayName(normal.parent_path().filename().string());
  return name;
}

// The organisation-level file is read only by the wrapper scripts.
void NoteOrgParams(const fs::path& org, const PackageOptions& options, OrgReport& report) {
  const fs::path org_params = org / "package_checker_params";
  std::error_code ec;
  if (!fs::exists(org_params, ec)) return;
  absl::StatusOr<std::string> text = ReadFileLimited(org_params, kMaxSmallFileBytes);
  if (!text.ok()) {
    report.warnings.push_back(std::string(text.status().message()));
    return;
  }
  OrgParamsRequest req = ParseOrgParams(*text);
  if (req.rcp_bypass && !options.rcp_bypass) {
    report.notes.push_back(
        fmt::format("{} asks for an RCP bypass, which the package checker does not read from "
                    "there; not applied "
                    "(pass --rcp-bypass to apply it, as the official wrapper script does)",
                    DisplayPath(org_params)));
  }
  if (req.seed_checker_bypass && !options.seed_checker_bypass) {
    report.notes.push_back(
        fmt::format("{} asks for a seed checker bypass, which the package checker does not "
                    "read from there; not "
                    "applied (pass --seed-checker-bypass to apply it)",
                    DisplayPath(org_params)));
  }
}

// The division of results/<system>, from its system description (spec 7.2).
std::string SystemDivision(const fs::path& sys_dir, const std::string& system,
                           const std::string& ruleset, OrgReport& report) {
  const SystemReport* desc = FindSystem(report, system);
  if (!desc) {
    report.errors.push_back(
        fmt::format("{}: no system description systems/{}.json for this results folder (the "
                    "official package checker "
                    "stops here)",
                    DisplayPath(sys_dir), DisplayName(system)));
    return "";
  }
  const json::Value* div = desc->desc_loaded ? desc->desc.Find("division") : nullptr;
  if (div && div->is_string() && div->as_string() == "closed") return "closed";
  // From 1.0.0 on the description check has failed the package already;
  // before, this read is the only one, and the official checker stops at it.
  if (!div && !FullPackageChecks(ruleset)) {
    report.errors.push_back(fmt::format(
        "{}: systems/{}.json {}, so the official package checker stops here", DisplayPath(sys_dir),
        DisplayName(system), desc->desc_loaded ? "has no division" : "cannot be read as JSON"));
  }
  return "";
}

// Lists one benchmark directory into d (runs still unchecked) and its logs
// into tasks; `index` is where d will go in report.dirs.
void AddBenchmarkDir(const fs::path& dir, const std::string& benchmark,
                     const PackageParams& sys_params, const PackageOptions& options, size_t index,
                     BenchmarkDirReport& d, std::vector<LogTask>& tasks, bool& input_error) {
  absl::StatusOr<std::vector<DirEntry>> files = ListDir(dir);
  if (!files.ok()) {
    d.errors.push_back(std::string(files.status().message()));
    input_error = true;
    return;
  }
  const PackageParams params = ReadParams(dir / "package_checker_params", d.warnings);
  d.rcp_bypass = options.rcp_bypass || sys_params.rcp_bypass || params.rcp_bypass;
  d.seed_checker_bypass =
      options.seed_checker_bypass || sys_params.seed_checker_bypass || params.seed_checker_bypass;
  size_t n_params = 0, n_results = 0;
  for (const DirEntry& f : *files) {
    if (f.name == "package_checker_params") ++n_params;
    if (!IsResultLogName(f.name)) continue;
    ++n_results;
    if (!f.error.empty()) {
      d.errors.push_back(fmt::format("{}: {}", DisplayPath(dir / f.name), f.error));
      input_error = true;
      continue;
    }
    if (!f.is_regular) {
      // Never dropped quietly: scoring the remaining runs could pass a package
      // that is missing one.
      d.errors.push_back(fmt::format("{}: not a regular file; a result log must be one",
                                     DisplayPath(dir / f.name)));
      input_error = true;
      continue;
    }
    tasks.push_back({index, d.runs.size(), dir / f.name});
    d.runs.emplace_back();
  }
  d.required_runs = meta::ResultFiles(benchmark);
  if (d.required_runs && static_cast<int>(n_results) != *d.required_runs) {
    d.errors.push_back(fmt::format("{} result_*.txt files, the benchmark requires exactly {}",
                                   n_results, *d.required_runs));
  }
  if (files->size() > n_results + n_params) {
    d.warnings.push_back(
        fmt::format("{} files in the directory, some not named result_*.txt", files->size()));
  }
}

// Adds every benchmark directory of results/<system> to the report.
void AddSystem(const fs::path& org, const std::string& system,
               const std::vector<std::string>& allowed, const PackageOptions& options,
               OrgReport& report, std::vector<LogTask>& tasks) {
  const fs::path sys_dir = org / "results" / system;
  std::vector<std::string> param_warnings;
  const PackageParams sys_params = ReadParams(sys_dir / "package_checker_params", param_warnings);
  report.warnings.insert(report.warnings.end(), param_warnings.begin(), param_warnings.end());
  const std::string division = SystemDivision(sys_dir, system, options.ruleset, report);
  ReadPrivateId(sys_dir, system, report);
  absl::StatusOr<std::vector<DirEntry>> benchmarks = ListDir(sys_dir);
  if (!benchmarks.ok()) {
    report.errors.push_back(std::string(benchmarks.status().message()));
    report.input_error = true;
    return;
  }
  for (const DirEntry& b : *benchmarks) {
    if (options.only_benchmark && *options.only_benchmark != b.name) continue;
    if (!b.error.empty()) {
      report.errors.push_back(fmt::format("{}: {}", DisplayPath(sys_dir / b.name), b.error));
      report.input_error = true;
      continue;
    }
    if (!b.is_dir) continue;
    BenchmarkDirReport d;
    d.path = DisplayPath(sys_dir / b.name);
    d.location = sys_dir / b.name;
    d.system = DisplayName(system);
    d.benchmark = DisplayName(b.name);
    d.division = division;
    if (std::find(allowed.begin(), allowed.end(), b.name) == allowed.end()) {
      d.skipped = true;
      d.warnings.push_back(fmt::format("{} is not a benchmark of ruleset {}; skipped", d.benchmark,
                                       options.ruleset));
    } else {
      AddBenchmarkDir(d.location, b.name, sys_params, options, report.dirs.size(), d, tasks,
                      report.input_error);
    }
    report.dirs.push_back(std::move(d));
  }
}

// The summarizer's Energy column: the scored runs' energies, olympic mean in
// the order of their times. A power log it cannot use is a warning (the
// official summarizer stops there).
void ScoreEnergy(const fs::path& power, BenchmarkDirReport& d) {
  if (d.score.dropped_runs > d.score.max_dropped) return;
  std::vector<double> energies, minutes;
  for (const RunDetail& r : d.runs) {
    if (!r.log.compliant() || !r.minutes) continue;
    absl::StatusOr<double> e = RunEnergy(power, r.stem, *r.minutes * 60 * 1000);
    if (!e.ok()) {
      d.warnings.push_back(fmt::format("no energy score: {}", std::string(e.status().message())));
      return;
    }
    energies.push_back(*e);
    minutes.push_back(*r.minutes);
  }
  const std::optional<double> mean =
      OlympicEnergy(energies, minutes, d.score.dropped_runs, d.score.max_dropped);
  if (mean) d.energy = *mean * d.score.scaling_factor;
}

// The directory verdict once its runs are checked (check_training_package).
void FinishDirectory(BenchmarkDirReport& d, const std::vector<const mllog::ParsedLog*>& logs,
                     const std::vector<uint64_t>& fingerprints, bool all_parsed,
                     const PackageOptions& options) {
  std::set<std::string> error_set;
  for (const RunDetail& r : d.runs) {
    if (!r.compliant) error_set.insert(r.stem);
  }
  std::error_code ec;
  const fs::path power = d.location / "power";
  if (fs::exists(power, ec)) {
    std::vector<std::string> stems;
    for (const RunDetail& r : d.runs) stems.push_back(r.stem);
    PowerCheck p = CheckPower(power, stems);
    error_set.insert(p.failed_runs.begin(), p.failed_runs.end());
    d.warnings.insert(d.warnings.end(), p.warnings.begin(), p.warnings.end());
    for (const std::string& e : p.errors)
      d.errors.push_back(fmt::format("power check cannot run: {}", e));
  }
  d.failed_runs = static_cast<int>(error_set.size());
  const int allowed = meta::OlympicDropPerSide(d.benchmark);
  if (d.failed_runs > allowed) {
    d.errors.push_back(fmt::format(
        "{} runs do not comply, more than the {} olympic scoring accepts", d.failed_runs, allowed));
  } else if (d.failed_runs > 0) {
    d.warnings.push_back(
        fmt::format("{} run(s) do not comply, accepted under olympic scoring", d.failed_runs));
  }

  std::vector<std::vector<std::string>> seeds;
  if (d.division == "closed" && FullPackageChecks(options.ruleset)) {
    if (d.seed_checker_bypass) {
      d.warnings.push_back("seed checker bypassed");
    } else {
      d.seed_check_ran = true;
      SeedCheck s = CheckSeeds(logs);
      seeds = s.seeds;
      if (!all_parsed) d.errors.push_back("seed checker: some result logs could not be read");
      for (const std::string& e : s.errors) d.errors.push_back(fmt::format("seed checker: {}", e));
      d.warnings.insert(d.warnings.end(), s.warnings.begin(), s.warnings.end());
    }
    const meta::BenchmarkMeta* known = meta::FindBenchmark(d.benchmark);
    if (!known || known->rcp_checked) {
      d.rcp_ran = true;
      absl::StatusOr<RcpVerdict> rcp = absl::DataLossError("some result logs could not be read");
      if (all_parsed) {
        rcp = CheckRcpLogs(
            logs, {.ruleset = options.ruleset, .pass = RcpPass::kPruned, .bypass = d.rcp_bypass});
      }
      if (!rcp.ok()) {
        d.rcp_error = std::string(rcp.status().message());
        d.errors.push_back(fmt::format("RCP check cannot run: {}", d.rcp_error));
      } else {
        d.rcp = *rcp;
        for (size_t i = 0; i < d.runs.size() && i < rcp->run_epochs.size(); ++i)
          d.runs[i].rcp_epochs = rcp->run_epochs[i];
        if (!rcp->passed) d.errors.push_back(fmt::format("RCP test failed: {}", rcp->message));
        if (options.report_details) {
          d.pruning_note = CheckPruningNote(
              logs, *rcp,
              {.ruleset = options.ruleset, .pass = RcpPass::kPruned, .bypass = d.rcp_bypass});
        }
        d.warnings.insert(d.warnings.end(), rcp->warnings.begin(), rcp->warnings.end());
        std::vector<std::string> health = RcpHealthNotes(*rcp, options.ruleset);
        d.review_warnings.insert(d.review_warnings.end(), health.begin(), health.end());
      }
    }
  }
  if (seeds.empty()) seeds = CheckSeeds(logs).seeds;
  if (all_parsed) {
    for (size_t i = 0; i < d.runs.size() && i < seeds.size(); ++i) d.runs[i].seeds = seeds[i];
  }
  std::vector<std::string> dir_warnings = DirectoryWarnings(logs, fingerprints, seeds, d.benchmark);
  d.review_warnings.insert(d.review_warnings.end(), dir_warnings.begin(), dir_warnings.end());
  if (all_parsed) {
    std::vector<std::string> seed_notes = DirectorySeedNotes(d, options.ruleset);
    d.review_warnings.insert(d.review_warnings.end(), seed_notes.begin(), seed_notes.end());
  }

  // The summarizer's score, with the scaling.json it would read.
  std::vector<RunTime> times;
  for (const RunDetail& r : d.runs)
    times.push_back({.path = r.path, .compliant = r.log.compliant(), .minutes = r.minutes});
  const fs::path scaling = d.location / "scaling.json";
  if (fs::exists(scaling, ec)) {
    absl::StatusOr<std::string> text = ReadFileLimited(scaling, kMaxSmallFileBytes);
    absl::StatusOr<double> f = text.ok() ? ParseScalingJson(*text, DisplayPath(scaling))
                                         : absl::StatusOr<double>(text.status());
    if (f.ok()) {
      d.existing_scaling_factor = *f;
    } else {
      d.warnings.push_back(std::string(f.status().message()));
    }
  }
  absl::StatusOr<RcpVerdict> rcp_status =
      d.rcp ? absl::StatusOr<RcpVerdict>(*d.rcp)
            : absl::StatusOr<RcpVerdict>(absl::UnknownError(d.rcp_error));
  const double factor = SummarizerScalingFactor(options.scaling, d.existing_scaling_factor,
                                                d.rcp_ran ? &rcp_status : nullptr);
  d.score = ScoreBenchmark(d.benchmark, times, factor);
  if (fs::is_directory(power, ec)) ScoreEnergy(power, d);
}

// Hands directory i its checked runs (report.dirs[i], outputs [i]) for the
// verdict, then frees its parsed logs; returns whether a log could not be read.
bool FinishCheckedDirectory(size_t i, RunOutputs& outputs, const PackageOptions& options,
                            const checker::RuleLibrary& rules, OrgReport& report) {
  BenchmarkDirReport& d = report.dirs[i];
  std::vector<const mllog::ParsedLog*> logs;
  std::vector<uint64_t> fingerprints;
  bool all_parsed = true, input_error = false;
  for (size_t r = 0; r < d.runs.size(); ++r) {
    if (d.runs[r].log.input_error) {
      input_error = true;
      d.errors.push_back(fmt::format("cannot read {}", d.runs[r].log.errors.front().message));
    }
    if (outputs.parsed[i][r]) {
      logs.push_back(&*outputs.parsed[i][r]);
      fingerprints.push_back(outputs.fingerprints[i][r]);
    } else {
      all_parsed = false;
    }
    d.review_warnings.insert(d.review_warnings.end(), outputs.review[i][r].begin(),
                             outputs.review[i][r].end());
  }
  FinishDirectory(d, logs, fingerprints, all_parsed, options);
  if (options.report_details)
    d.targets = QualityTargets(rules, options.ruleset, d.division, d.benchmark);
  for (auto& parsed : outputs.parsed[i]) parsed.reset();
  return input_error;
}

// The logs of a whole round are hundreds of MB: they are parsed and finished
// in waves of about this many, so memory stays bounded and both steps use
// every core.
constexpr size_t kWaveLogs = 64;

// Checks every log of report.dirs (tasks in directory order) and finishes
// each directory.
void CheckDirectories(const std::vector<LogTask>& tasks, const checker::RuleLibrary& rules,
                      const PackageOptions& options, OrgReport& report) {
  RunOutputs outputs;
  for (const BenchmarkDirReport& d : report.dirs) {
    outputs.parsed.emplace_back(d.runs.size());
    outputs.fingerprints.emplace_back(d.runs.size());
    outputs.review.emplace_back(d.runs.size());
  }
  std::vector<char> unreadable(report.dirs.size(), 0);
  size_t first_task = 0;
  for (size_t begin = 0; begin < report.dirs.size();) {
    size_t end = begin, n_logs = 0;
    while (end < report.dirs.size() &&
           (end == begin || n_logs + report.dirs[end].runs.size() <= kWaveLogs))
      n_logs += report.dirs[end++].runs.size();
    size_t last_task = first_task;
    while (last_task < tasks.size() && tasks[last_task].dir < end) ++last_task;
    base::ParallelFor(last_task - first_task, options.jobs, [&](size_t k) {
      const LogTask& t = tasks[first_task + k];
      CheckRun(t.path, report.dirs[t.dir].benchmark, rules, options, report.dirs[t.dir].runs[t.run],
               outputs.parsed[t.dir][t.run], outputs.fingerprints[t.dir][t.run],
               outputs.review[t.dir][t.run]);
    });
    base::ParallelFor(end - begin, options.jobs, [&](size_t k) {
      if (!report.dirs[begin + k].skipped)
        unreadable[begin + k] = FinishCheckedDirectory(begin + k, outputs, options, rules, report);
    });
    first_task = last_task;
    begin = end;
  }
  for (char u : unreadable) report.input_error = report.input_error || u;
}

}  // namespace

bool PackageRulesetSupported(const checker::RuleLibrary& rules, const std::string& ruleset) {
  return rules.HasRuleset(ruleset) && !meta::AllowedBenchmarks(ruleset).empty();
}

absl::StatusOr<std::string> PackageRuleset(const fs::path& org,
                                           const std::optional<std::string>& given,
                                           const checker::RuleLibrary& rules) {
  const std::optional<std::string> ruleset = given ? given : RulesetFromPath(org);
  if (!ruleset) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: cannot tell which training ruleset this package follows (no vN.M round folder in "
        "its path); give it with --ruleset X.Y.Z, e.g. --ruleset 3.0.0 for the v3.0 round",
        DisplayPath(org)));
  }
  if (!PackageRulesetSupported(rules, *ruleset)) {
    return absl::InvalidArgumentError(
        fmt::format("{}: ruleset {}{} is not supported; give one with --ruleset X.Y.Z",
                    DisplayPath(org), *ruleset, given ? "" : " (from the folder name)"));
  }
  return *ruleset;
}

bool FullPackageChecks(const std::string& ruleset) { return RcpCheckerSupportsRuleset(ruleset); }

int BenchmarkDirReport::converged_runs() const {
  int n = 0;
  for (const RunDetail& r : runs) n += r.log.compliant() ? 1 : 0;
  return n;
}

bool OrgReport::passed() const {
  if (!errors.empty() || input_error) return false;
  return std::all_of(dirs.begin(), dirs.end(),
                     [](const BenchmarkDirReport& d) { return d.passed(); });
}

OrgReport CheckOrganization(const fs::path& org, const checker::RuleLibrary& rules,
                            const PackageOptions& options) {
  OrgReport report;
  report.path = DisplayPath(org);
  report.name = OrgName(org);
  report.ruleset = options.ruleset;
  if (options.folder_ruleset && *options.folder_ruleset != options.ruleset) {
    report.warnings.push_back(
        fmt::format("checked under ruleset {} as --ruleset asks, but the round folder in its path "
                    "says {}",
                    options.ruleset, *options.folder_ruleset));
  }
  NoteOrgParams(org, options, report);
  CheckSystemDescriptions(org, options, report);

  absl::StatusOr<std::vector<DirEntry>> systems = ListDir(org / "results");
  if (!systems.ok()) {
    report.errors.push_back(std::string(systems.status().message()));
    report.input_error = true;
    return report;
  }
  const std::vector<std::string> allowed = meta::AllowedBenchmarks(options.ruleset);
  std::vector<LogTask> tasks;
  for (const DirEntry& sys : *systems) {
    if (options.only_system && *options.only_system != sys.name) continue;
    if (!sys.error.empty()) {
      report.errors.push_back(
          fmt::format("{}: {}", DisplayPath(org / "results" / sys.name), sys.error));
      report.input_error = true;
      continue;
    }
    if (sys.is_dir) AddSystem(org, sys.name, allowed, options, report, tasks);
  }

  CheckDirectories(tasks, rules, options, report);
  bool checked = false;
  for (const BenchmarkDirReport& d : report.dirs) checked = checked || !d.skipped;
  if (!checked && !report.input_error) {
    report.warnings.push_back("no benchmark results were found to check: the package is empty");
  }
  // Reviewer notes on the whole package (never part of the verdict).
  for (std::vector<std::string> notes : {DescriptionNotes(report), SharedSeedNotes(report)})
    report.notes.insert(report.notes.end(), notes.begin(), notes.end());
  if (std::optional<std::string> guess = RulesetGuessNote(report, rules))
    report.notes.push_back(*guess);
  return report;
}

absl::Status WriteScalingFiles(const OrgReport& report) {
  for (const BenchmarkDirReport& d : report.dirs) {
    if (!d.rcp || !d.rcp->compared) continue;
    const fs::path path = d.location / "scaling.json";
    std::error_code ec;
    fs::remove(path, ec);
    if (ec)
      return absl::PermissionDeniedError(
          fmt::format("{}: cannot remove: {}", DisplayPath(path), ec.message()));
    if (!d.rcp->scaling_factor_written) continue;
    // json.dumps({'scaling_factor': f}), no newline, as the RCP checker writes it.
    if (absl::Status s = base::WriteFileAtomically(
            path, json::Dump(json::Value(
                      json::Object{{"scaling_factor", *d.rcp->scaling_factor_written}})));
        !s.ok())
      return absl::PermissionDeniedError(fmt::format("{}: cannot write", DisplayPath(path)));
  }
  return absl::OkStatus();
}

}  // namespace mlperf::package
