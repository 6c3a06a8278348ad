// The reference convergence points (RCPs) of one ruleset and benchmark, with
// the statistics the official RCP checker derives from them (spec 6.1, 6.4):
// olympic mean, population stdev of the full list, minimum acceptable mean,
// maximum speedup, interpolation between batch sizes and the pruned set.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"

namespace mlperf::package {

struct RcpRecord {
  std::string name;       // e.g. "resnet_ref_1632", or "resnet_interp_3200"
  std::string benchmark;  // as the record names it (3.1.0 stable_diffusion says "sd")
  int64_t global_batch_size = 0;
  std::vector<double> converge;  // epochs or samples to converge, ascending; empty if interpolated
  double mean = 0;               // olympic mean (4 dropped per side for unet3d, else 1)
  double stdev = 0;              // population stdev of the full list (HEAD; rc2 trimmed it)
  double min_epochs = 0;         // RcpMinEpochs
  double max_speedup = 0;        // mean / min_epochs
  bool interpolated = false;
  // The reference's settings at this batch size, as the RCP file lists them
  // (an object; null when the file gives none).
  json::Value hyperparameters;
};

// A record the pruning drops, and why: a batch size below the
// fastest-converging record's, or a mean above the line between the kept
// neighbours `lo` and `hi` (whose line predicts `predicted_mean` there).
struct PrunedRecord {
  RcpRecord record;
  bool below_fastest = false;
  int64_t lo_batch_size = 0, hi_batch_size = 0;
  double predicted_mean = 0;
};

class RcpTable {
 public:
  // Our normalised format (quality_targets/rcp/<ruleset>/rcps_<benchmark>.json).
  // `source` names the data in error messages.
  static absl::StatusOr<RcpTable> FromJson(std::string_view text, const std::string& source);
  // The table compiled into the binary; NotFound when the ruleset has no RCPs
  // for the benchmark.
  static absl::StatusOr<RcpTable> Embedded(const std::string& ruleset,
                                           const std::string& benchmark);

  const std::string& ruleset() const { return ruleset_; }
  const std::string& benchmark() const { return benchmark_; }
  int submission_runs() const { return submission_runs_; }

  // All records, sorted by batch size (stable: file order among equal sizes).
  const std::vector<RcpRecord>& full() const { return full_; }
  // The default set for package checks: the fastest-converging record and the
  // larger batch sizes that are not slower than the line between their
  // neighbours (HEAD compares means; no backtracking after a removal).
  const std::vector<RcpRecord>& pruned() const { return pruned_; }
  // What pruning keeps when it re-tests a kept neighbour after each removal:
  // the records on the lower convex envelope of (batch size, mean) from the
  // fastest record on. pruned() can keep a point above it (the official
  // tool never backtracks; mlcommons/logging issue #368). Reported as a
  // note only; verdicts use pruned().
  const std::vector<RcpRecord>& envelope() const { return envelope_; }
  // What pruned() drops from full(), in batch size order.
  const std::vector<PrunedRecord>& removed() const { return removed_; }

  // A record at `global_batch_size` between `lo` and `hi`: mean and stdev
  // linear in batch size; min_epochs with n_ref = 2 * submission_runs.
  RcpRecord Interpolate(int64_t global_batch_size, const RcpRecord& lo, const RcpRecord& hi) const;

 private:
  std::string ruleset_;
  std::string benchmark_;
  int submission_runs_ = 0;
  std::vector<RcpRecord> full_;
  std::vector<RcpRecord> pruned_;
  std::vector<RcpRecord> envelope_;
  std::vector<PrunedRecord> removed_;
};

// Rulesets the package checker runs the RCP check for (benchmarks.json).
bool RcpCheckerSupportsRuleset(const std::string& ruleset);

// "ruleset/benchmark" pairs with embedded RCP data, in path order.
std::vector<std::pair<std::string, std::string>> EmbeddedRcpTables();

}  // namespace mlperf::package
