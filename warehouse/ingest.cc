#include "warehouse/ingest.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>

#include "absl/strings/str_join.h"
#include "base/json.h"
#include "base/version.h"
#include "checker/package/layout.h"
#include "checker/package/results_table.h"
#include "checker/package/table_cells.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"
#include "warehouse/provenance.h"
#include "warehouse/schema.h"

namespace mlperf::warehouse {
namespace fs = std::filesystem;
namespace {

using package::BenchmarkDirReport;
using package::OrgReport;
using package::RunDetail;
using package::SystemReport;
using Row = std::vector<DbValue>;

DbValue Opt(const std::optional<double>& v) { return v ? DbValue(*v) : DbValue(); }
DbValue Opt(const std::optional<long long>& v) { return v ? DbValue(*v) : DbValue(); }
DbValue Text(const std::string& s) { return s.empty() ? DbValue() : DbValue(s); }
DbValue Flag(bool b) { return static_cast<long long>(b); }

// Epochs and samples to converge from what the RCP reader read: where the
// convergence point is an epoch_num (ResNet, 3D U-Net, ...), epochs, and
// samples through the data set size the log gives as train_samples; for the
// others, samples only (BERT's epoch_num counts samples, and its
// train_samples is what it trained on, not a data set size). NaN: unknown.
std::pair<double, double> EpochsAndSamples(const std::string& benchmark, double convergence,
                                           const RunDetail& run) {
  const meta::BenchmarkMeta* m = meta::FindBenchmark(benchmark);
  const bool in_samples = m && m->converged_at != meta::ConvergedAt::kEpochNum;
  if (in_samples) return {std::nan(""), convergence};
  double train_samples = std::nan("");
  if (auto it = run.hyperparameters.find("train_samples");
      it != run.hyperparameters.end() && it->second.is_number() && it->second.as_float() > 0)
    train_samples = it->second.as_float();
  return {convergence, convergence * train_samples};
}

// A description field as the summarizer reads it (str(value)); JSON for
// lists and objects.
std::string FieldText(const json::Value& v) {
  if (v.is_string()) return v.as_string();
  if (v.is_array() || v.is_object()) return json::Dump(v);
  return package::DescField(json::Value(json::Object{{"v", v}}), "v");
}

std::string CheckerVersion() {
  std::string v = base::VersionLine("compliance_check");
  while (!v.empty() && v.back() == '\n') v.pop_back();
  return v;
}

// What a package's rows are, built before the transaction opens.
struct PackageRows {
  Row package;
  std::vector<Row> systems, system_fields, results, runs, run_keys, checks;
};

struct Checks {
  std::string key;
  std::vector<Row>& rows;
  void Add(const std::string& system, const std::string& benchmark, const std::string& run,
           const char* level, const std::string& message) {
    rows.push_back({key, system, benchmark, run, static_cast<long long>(rows.size()),
                    std::string(level), message});
  }
};

void SystemRows(const std::string& key, const SystemReport& s, PackageRows& out) {
  const json::Value& d = s.desc;
  const auto field = [&](const char* name) -> DbValue {
    return s.desc_loaded ? Text(package::DescField(d, name)) : DbValue();
  };
  const std::optional<long long> nodes = package::ToInt(package::DescField(d, "number_of_nodes"));
  const std::optional<long long> per_node =
      package::ToInt(package::DescField(d, "accelerators_per_node"));
  std::optional<long long> accelerators;
  if (nodes && per_node) accelerators = *nodes * *per_node;
  std::string error = s.error;
  if (error.empty() && !s.check.valid) error = absl::StrJoin(s.check.reasons, "; ");
  out.systems.push_back({key, s.name, field("submitter"), field("division"), field("status"),
                         field("system_name"), Opt(nodes), field("accelerator_model_name"),
                         Opt(per_node), Opt(accelerators), field("host_processor_model_name"),
                         field("framework"), Flag(s.desc_loaded && s.check.valid), Text(error)});
  if (!s.desc_loaded || !d.is_object()) return;
  std::vector<std::string> seen;
  for (const json::Member& m : d.as_object()) {
    // A key given twice: the last value, as Python's json keeps it.
    if (std::find(seen.begin(), seen.end(), m.first) != seen.end()) continue;
    seen.push_back(m.first);
    out.system_fields.push_back({key, s.name, m.first, FieldText(*d.Find(m.first))});
  }
}

void RunRows(const std::string& key, const BenchmarkDirReport& d, size_t i,
             const PackageDigest& digest, const fs::path& org, PackageRows& out) {
  const RunDetail& r = d.runs[i];
  const std::string rel = (d.location / (r.stem + ".txt")).lexically_relative(org).generic_string();
  const auto hash = digest.files.find(rel);
  std::optional<double> gbs;
  if (auto it = r.hyperparameters.find("global_batch_size");
      it != r.hyperparameters.end() && it->second.is_number())
    gbs = it->second.as_float();
  // 1e9 is the RCP reader's "did not converge".
  const double convergence = r.rcp_epochs && *r.rcp_epochs < 1e9 ? *r.rcp_epochs : std::nan("");
  const auto [epochs, samples] = EpochsAndSamples(d.benchmark, convergence, r);
  out.runs.push_back({key, d.system, d.benchmark, r.stem,
                      hash == digest.files.end() ? DbValue() : DbValue(hash->second),
                      Text(absl::StrJoin(r.seeds, ",")), Opt(r.run_start_ms), Opt(r.run_stop_ms),
                      Opt(r.minutes), Text(r.run_status), Flag(r.run_status == "success"),
                      Flag(r.compliant), Flag(i < d.score.counted.size() && d.score.counted[i]),
                      FiniteOrNull(convergence), FiniteOrNull(epochs), FiniteOrNull(samples),
                      Opt(gbs)});
  for (const auto& [k, v] : r.hyperparameters)
    out.run_keys.push_back({key, d.system, d.benchmark, r.stem, k, json::Dump(v)});
}

void ResultRows(const std::string& key, const BenchmarkDirReport& d, const PackageDigest& digest,
                const fs::path& org, PackageRows& out, Checks& checks) {
  const bool closed = d.division == "closed";
  std::optional<double> gbs;
  if (closed && d.rcp && d.rcp->global_batch_size.is_number())
    gbs = d.rcp->global_batch_size.as_float();
  const auto& rec = d.rcp ? d.rcp->record : std::nullopt;
  int compliant = 0;
  for (const RunDetail& r : d.runs) compliant += r.compliant ? 1 : 0;
  const std::string verdict = d.skipped ? "SKIPPED" : d.passed() ? "PASS" : "FAIL";
  out.results.push_back(
      {key,
       d.system,
       d.benchmark,
       Text(d.division),
       verdict,
       d.required_runs ? DbValue(static_cast<long long>(*d.required_runs)) : DbValue(),
       static_cast<long long>(d.runs.size()),
       static_cast<long long>(compliant),
       static_cast<long long>(d.score.dropped_runs),
       Opt(d.score.olympic_mean),
       d.score.scaling_factor,
       Opt(d.score.score),
       Opt(d.energy),
       Opt(gbs),
       d.rcp ? Opt(d.rcp->submission_mean) : DbValue(),
       Text(package::SummarizerRcpStatus(d)),
       d.rcp ? Text(d.rcp->message) : Text(d.rcp_error),
       rec ? Text(rec->name) : DbValue(),
       rec ? DbValue(rec->mean) : DbValue(),
       rec ? DbValue(rec->stdev) : DbValue(),
       rec ? DbValue(rec->min_epochs) : DbValue()});
  for (const std::string& e : d.errors) checks.Add(d.system, d.benchmark, "", "error", e);
  for (const std::string& w : d.warnings) checks.Add(d.system, d.benchmark, "", "warning", w);
  for (const std::string& w : d.review_warnings) checks.Add(d.system, d.benchmark, "", "review", w);
  for (size_t i = 0; i < d.runs.size(); ++i) {
    RunRows(key, d, i, digest, org, out);
    const RunDetail& r = d.runs[i];
    for (const checker::Finding& f : r.log.errors)
      checks.Add(d.system, d.benchmark, r.stem, "error", f.message);
    for (const checker::Finding& f : r.log.warnings)
      checks.Add(d.system, d.benchmark, r.stem, "warning", f.message);
  }
}

PackageRows BuildRows(const std::string& key, const fs::path& org, const OrgReport& report,
                      const PackageDigest& digest, const std::optional<std::string>& commit) {
  PackageRows out;
  out.package = {key,
                 "v" + package::ShortRound(report.ruleset),
                 report.ruleset,
                 report.name,
                 std::string(report.passed() ? "PASS" : "FAIL"),
                 Flag(report.input_error),
                 package::DisplayPath(fs::absolute(org).lexically_normal()),
                 digest.sha256,
                 static_cast<long long>(digest.files.size()),
                 static_cast<long long>(digest.bytes),
                 commit ? DbValue(*commit) : DbValue(),
                 CheckerVersion()};
  Checks checks{key, out.checks};
  for (const std::string& e : report.errors) checks.Add("", "", "", "error", e);
  for (const std::string& w : report.warnings) checks.Add("", "", "", "warning", w);
  for (const std::string& n : report.notes) checks.Add("", "", "", "note", n);
  for (const SystemReport& s : report.systems) SystemRows(key, s, out);
  for (const BenchmarkDirReport& d : report.dirs) ResultRows(key, d, digest, org, out, checks);
  return out;
}

const std::vector<std::string>& Columns(std::string_view table) {
  static const std::map<std::string_view, std::vector<std::string>> kColumns = {
      {"packages",
       {"package", "round", "ruleset", "submitter", "verdict", "input_error", "source_path",
        "content_sha256", "files", "bytes", "repo_commit", "checker_version"}},
      {"systems",
       {"package", "system", "submitter", "division", "availability", "system_name",
        "number_of_nodes", "accelerator_model_name", "accelerators_per_node", "accelerators",
        "host_processor_model_name", "framework", "description_valid", "description_error"}},
      {"system_fields", {"package", "system", "field", "value"}},
      {"results",
       {"package",
        "system",
        "benchmark",
        "division",
        "verdict",
        "required_runs",
        "runs",
        "compliant_runs",
        "dropped_runs",
        "olympic_mean",
        "rcp_scaling_factor",
        "score",
        "energy",
        "global_batch_size",
        "convergence_mean",
        "rcp_status",
        "rcp_message",
        "rcp_record",
        "rcp_mean",
        "rcp_stdev",
        "rcp_min_epochs"}},
      {"runs",
       {"package", "system", "benchmark", "run", "file_sha256", "seed", "run_start_ms",
        "run_stop_ms", "minutes", "status", "converged", "compliant", "counted", "convergence",
        "epochs_to_converge", "samples_to_converge", "global_batch_size"}},
      {"run_keys", {"package", "system", "benchmark", "run", "key", "value"}},
      {"checks", {"package", "system", "benchmark", "run", "position", "level", "message"}},
  };
  return kColumns.at(table);
}

// Deletes the package's old rows and inserts the new ones in one
// transaction; anything that fails rolls the whole package back.
absl::Status Store(Database& db, const std::string& key, const PackageRows& rows) {
  return InTransaction(db, [&]() -> absl::Status {
    for (std::string_view table : kPackageTables) {
      if (absl::Status s =
              db.Execute(fmt::format("DELETE FROM {} WHERE package = ?", table), {key});
          !s.ok())
        return s;
    }
    const std::pair<std::string_view, const std::vector<Row>*> parts[] = {
        {"systems", &rows.systems},   {"system_fields", &rows.system_fields},
        {"results", &rows.results},   {"runs", &rows.runs},
        {"run_keys", &rows.run_keys}, {"checks", &rows.checks}};
    if (absl::Status s = db.InsertMany("packages", Columns("packages"), {rows.package}); !s.ok())
      return s;
    for (const auto& [table, part] : parts) {
      if (absl::Status s = db.InsertMany(table, Columns(table), *part); !s.ok()) return s;
    }
    // For the interrupted-ingest tests: every row written, nothing committed,
    // then this signal (9: a crash, 2: Ctrl-C).
    if (const char* sig = std::getenv("MLPERF_RESULTS_DB_SIGNAL_BEFORE_COMMIT"))
      kill(getpid(), std::atoi(sig));
    return absl::OkStatus();
  });
}

// Whether a package is stored, and from these very files by this checker.
struct Previous {
  bool exists = false;
  bool same = false;
};

absl::StatusOr<Previous> Lookup(Database& db, const std::string& key, const std::string& sha256) {
  absl::StatusOr<QueryResult> r =
      db.Query("SELECT content_sha256, checker_version FROM packages WHERE package = ?", {key});
  if (!r.ok()) return r.status();
  if (r->rows.empty()) return Previous{};
  return Previous{
      .exists = true,
      .same = ValueText(r->rows[0][0]) == sha256 && ValueText(r->rows[0][1]) == CheckerVersion()};
}

// An unchanged package, as its stored rows describe it (its first error
// too, for the line on stderr).
absl::StatusOr<IngestResult> StoredResult(Database& db, const std::string& key) {
  absl::StatusOr<QueryResult> v = db.Query(
      "SELECT verdict, input_error, (SELECT COUNT(*) FROM results WHERE package = ?), "
      "(SELECT COUNT(*) FROM runs WHERE package = ?), (SELECT message FROM checks WHERE "
      "package = ? AND level = 'error' ORDER BY position LIMIT 1) FROM packages WHERE package = ?",
      {key, key, key, key});
  if (!v.ok()) return v.status();
  const std::vector<DbValue>& row = v->rows.at(0);
  IngestResult result{.package = key,
                      .outcome = IngestOutcome::kUnchanged,
                      .verdict = ValueText(row[0]),
                      .input_error = ValueText(row[1]) == "1",
                      .results = static_cast<int>(ValueNumber(row[2])),
                      .runs = static_cast<int>(ValueNumber(row[3]))};
  if (result.input_error) result.first_error = ValueText(row[4]);
  return result;
}

std::string FirstError(const OrgReport& report) {
  if (!report.errors.empty()) return report.errors.front();
  for (const BenchmarkDirReport& d : report.dirs) {
    if (!d.errors.empty()) return d.errors.front();
    for (const RunDetail& r : d.runs) {
      if (r.log.input_error && !r.log.errors.empty()) return r.log.errors.front().message;
    }
  }
  return report.path;
}

}  // namespace

std::string PackageKey(const std::string& ruleset, const fs::path& org) {
  std::error_code ec;
  const fs::path normal = fs::absolute(org, ec).lexically_normal();
  std::string name = normal.filename().string();
  if (name.empty()) name = normal.parent_path().filename().string();
  return fmt::format("v{}/{}", package::ShortRound(ruleset), package::DisplayName(name));
}

absl::StatusOr<IngestResult> IngestPackage(Database& db, const fs::path& org,
                                           const checker::RuleLibrary& rules,
                                           const IngestOptions& options) {
  IngestResult result;
  result.package = PackageKey(options.check.ruleset, org);
  absl::StatusOr<PackageDigest> digest = DigestPackage(org, options.check.jobs);
  if (!digest.ok()) return digest.status();
  absl::StatusOr<Previous> previous = Lookup(db, result.package, digest->sha256);
  if (!previous.ok()) return previous.status();
  if (previous->same && !options.force) return StoredResult(db, result.package);
  const OrgReport report = package::CheckOrganization(org, rules, options.check);
  const PackageRows rows = BuildRows(result.package, org, report, *digest,
                                     options.commit ? options.commit : RepoCommit(org));
  if (absl::Status s = Store(db, result.package, rows); !s.ok()) return s;
  result.outcome = previous->exists ? IngestOutcome::kReplaced : IngestOutcome::kStored;
  result.verdict = report.passed() ? "PASS" : "FAIL";
  result.input_error = report.input_error;
  if (report.input_error) result.first_error = FirstError(report);
  result.results = static_cast<int>(rows.results.size());
  result.runs = static_cast<int>(rows.runs.size());
  return result;
}

absl::StatusOr<IngestResult> IngestUncheckable(Database& db, const fs::path& org,
                                               const std::string& ruleset, const std::string& why) {
  IngestResult result{.package = PackageKey(ruleset, org),
                      .verdict = "FAIL",
                      .input_error = true,
                      .first_error = why};
  const OrgReport report{.path = package::DisplayPath(org),
                         .name = result.package.substr(result.package.find('/') + 1),
                         .ruleset = ruleset,
                         .errors = {why},
                         .input_error = true};
  // Its files, where they can be read, tell a changed folder from the same one.
  absl::StatusOr<PackageDigest> read = DigestPackage(org, 0);
  const PackageDigest digest = read.ok() ? *std::move(read) : PackageDigest{};
  absl::StatusOr<Previous> previous = Lookup(db, result.package, digest.sha256);
  if (!previous.ok()) return previous.status();
  if (previous->same) return StoredResult(db, result.package);
  if (absl::Status s =
          Store(db, result.package, BuildRows(result.package, org, report, digest, std::nullopt));
      !s.ok())
    return s;
  result.outcome = previous->exists ? IngestOutcome::kReplaced : IngestOutcome::kStored;
  return result;
}

}  // namespace mlperf::warehouse
