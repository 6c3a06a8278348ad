#include "checker/package/rcp_check.h"

#include <algorithm>

#include "checker/package/layout.h"
#include "checker/package/olympic_mean.h"
#include "checker/package/rcp_convergence.h"
#include "checker/py_ops.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {
namespace {

// Compares the submission with `rec` (_eval_submission_record).
void Compare(RcpRecord rec, const RcpCheckOptions& options, RcpVerdict& v) {
  // Some benchmarks accept a mean some samples below the minimum (llama31_405b from 5.0.0).
  const meta::BenchmarkMeta* known = meta::FindBenchmark(v.benchmark);
  if (known && known->min_mean_allowance_samples &&
      meta::RulesetAtLeast(options.ruleset, known->min_mean_allowance_from)) {
    rec.max_speedup = rec.mean / (rec.min_epochs - *known->min_mean_allowance_samples);
  }
  const double mean = OlympicMean(v.run_epochs, meta::OlympicDropPerSide(rec.benchmark));
  double norm = rec.mean / mean;
  if (norm < 1) norm = 1.0;
  v.compared = true;
  v.submission_mean = mean;
  v.normalization_factor = norm;
  // Written exactly as the official expression (~ rec.min_epochs).
  v.passed = mean >= rec.mean / rec.max_speedup;
  if (v.passed && mean < rec.mean) v.scaling_factor_written = norm;
  v.record = std::move(rec);
}

const RcpRecord* FindRecord(const std::vector<RcpRecord>& data, double bs) {
  for (const RcpRecord& r : data) {
    if (r.global_batch_size == bs) return &r;
  }
  return nullptr;
}

}  // namespace

absl::StatusOr<RcpVerdict> CheckRcpLogs(const std::vector<const mllog::ParsedLog*>& logs,
                                        const RcpCheckOptions& options) {
  RcpVerdict v;
  // get_submission_epochs: the first file that names a batch size (or a
  // benchmark) sets it; any later difference stops the check.
  json::Value benchmark;
  bool mismatch = false;
  for (const mllog::ParsedLog* log_ptr : logs) {
    const mllog::ParsedLog& log = *log_ptr;
    absl::StatusOr<RunConvergence> run = ReadRunConvergence(
        log, {.ruleset = options.ruleset, .bert_train_samples = options.bert_train_samples});
    if (!run.ok()) return run.status();
    if (!run->converged)
      v.warnings.push_back(fmt::format("{}: run incomplete or did not converge", log.path));
    v.run_epochs.push_back(run->epochs);
    v.unconverged_runs += run->converged ? 0 : 1;
    if (checker::py::Equals(v.global_batch_size, json::Value(-1))) {
      v.global_batch_size = run->global_batch_size;
    } else if (!checker::py::Equals(run->global_batch_size, v.global_batch_size)) {
      v.warnings.push_back(fmt::format("{}: batch size differs from the other files", log.path));
      mismatch = true;
      break;
    }
    if (benchmark.is_null()) {
      benchmark = run->benchmark;
    } else if (!checker::py::Equals(run->benchmark, benchmark)) {
      v.warnings.push_back(fmt::format("{}: benchmark differs from the other files", log.path));
      mismatch = true;
      break;
    }
  }
  // The official checker loads the RCPs before it looks at the batch size, so
  // an unknown benchmark raises even when the batch size is missing.
  if (mismatch) {
    return absl::FailedPreconditionError(
        "result files disagree on global_batch_size or submission_benchmark (the official RCP "
        "checker raises a KeyError here)");
  }
  if (!benchmark.is_string()) {
    return absl::FailedPreconditionError("no result file names a string submission_benchmark");
  }
  v.benchmark = benchmark.as_string();
  if (!RcpCheckerSupportsRuleset(options.ruleset)) {
    return absl::InvalidArgumentError(
        fmt::format("the RCP checker does not support ruleset {}", options.ruleset));
  }
  if (!meta::RcpRuns(v.benchmark)) {
    return absl::NotFoundError(
        fmt::format("unknown benchmark '{}' for the RCP checker", v.benchmark));
  }
  absl::StatusOr<RcpTable> table = RcpTable::Embedded(options.ruleset, v.benchmark);
  if (!table.ok()) return table.status();

  if (checker::py::Equals(v.global_batch_size, json::Value(-1))) {
    v.message = "Could not detect global_batch_size";
    return v;
  }
  const int max_unconverged = meta::OlympicDropPerSide(v.benchmark);
  if (v.unconverged_runs > max_unconverged) {
    v.message = "Insufficient convergence";
    return v;
  }
  if (!v.global_batch_size.is_number()) {
    return absl::InvalidArgumentError("global_batch_size is not a number");
  }
  const double bs = v.global_batch_size.as_float();
  const std::vector<RcpRecord>& data = options.pass == RcpPass::kPruned ? table->pruned()
                                       : options.pass == RcpPass::kFull ? table->full()
                                                                        : table->envelope();
  const std::string missing =
      fmt::format("Missing RCP, please submit RCP with BS = {}", json::Dump(v.global_batch_size));

  if (const RcpRecord* rec = FindRecord(data, bs)) {
    v.message = "RCP found";
    Compare(*rec, options, v);
  } else {
    // Neighbours: the first record with the largest batch size below, and
    // the first with the smallest above.
    const RcpRecord* lo = nullptr;
    const RcpRecord* hi = nullptr;
    const RcpRecord* smallest = nullptr;
    for (const RcpRecord& r : data) {
      const double rbs = static_cast<double>(r.global_batch_size);
      if (rbs < bs && rbs > 0 && (!lo || r.global_batch_size > lo->global_batch_size)) lo = &r;
      if (rbs > bs && rbs < 1e9 && (!hi || r.global_batch_size < hi->global_batch_size)) hi = &r;
      if (rbs < 1e9 && (!smallest || r.global_batch_size < smallest->global_batch_size))
        smallest = &r;
    }
    if (lo && hi) {
      v.message = "RCP Interpolation";
      Compare(table->Interpolate(static_cast<int64_t>(bs), *lo, *hi), options, v);
    } else if (lo) {
      v.message = missing;
    } else if (hi) {
      Compare(*smallest, options, v);
      v.message = v.passed ? "RCP not found but slower convergence on smaller batch size" : missing;
    } else {
      v.message = "Cannot find any RCPs";
    }
  }
  if (options.bypass && !v.passed &&
      (v.message == "RCP found" || v.message == "RCP Interpolation" || v.message == missing)) {
    v.message += " passed using rcp_bypass";
    v.passed = true;
    v.warnings.push_back("RCP test failed but allowed to proceed with RCP bypass");
  }
  return v;
}

absl::StatusOr<RcpVerdict> CheckRcpDirectory(const std::vector<std::string>& result_files,
                                             const RcpCheckOptions& options) {
  std::vector<mllog::ParsedLog> logs;
  for (const std::string& f : result_files) {
    absl::StatusOr<mllog::ParsedLog> log = ParseResultLog(f);
    if (!log.ok()) return log.status();
    KeepConvergenceLines(*log);
    logs.push_back(*std::move(log));
  }
  return CheckRcpLogs(logs, options);
}

absl::StatusOr<RcpVerdict> CheckRcpLogs(const std::vector<mllog::ParsedLog>& logs,
                                        const RcpCheckOptions& options) {
  std::vector<const mllog::ParsedLog*> ptrs;
  for (const mllog::ParsedLog& l : logs) ptrs.push_back(&l);
  return CheckRcpLogs(ptrs, options);
}

std::optional<PruningNote> CheckPruningNote(const std::vector<const mllog::ParsedLog*>& logs,
                                            const RcpVerdict& official,
                                            const RcpCheckOptions& options) {
  absl::StatusOr<RcpTable> table = RcpTable::Embedded(options.ruleset, official.benchmark);
  if (!table.ok()) return std::nullopt;
  PruningNote note;
  for (const RcpRecord& p : table->pruned()) {
    if (!FindRecord(table->envelope(), static_cast<double>(p.global_batch_size)) &&
        (note.kept_above_envelope.empty() ||
         note.kept_above_envelope.back() != p.global_batch_size))
      note.kept_above_envelope.push_back(p.global_batch_size);
  }
  if (note.kept_above_envelope.empty()) return std::nullopt;
  RcpCheckOptions envelope_options = options;
  envelope_options.pass = RcpPass::kEnvelope;
  absl::StatusOr<RcpVerdict> v = CheckRcpLogs(logs, envelope_options);
  if (!v.ok()) return std::nullopt;
  note.envelope = *std::move(v);
  note.verdict_differs = note.envelope.passed != official.passed;
  note.factor_differs = note.envelope.compared != official.compared ||
                        note.envelope.normalization_factor != official.normalization_factor;
  return note;
}

}  // namespace mlperf::package
