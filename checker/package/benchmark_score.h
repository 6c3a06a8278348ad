// A benchmark directory's score as the result summarizer computes it (spec
// 8.2, 8.4): the olympic average of the compliant runs' minutes, times the
// scaling factor from the directory's scaling.json.
//
// The summarizer reads scaling.json *before* its own RCP run rewrites it, so
// its score depends on what ran earlier. We never write into a submission;
// instead the caller picks which tree state to model (ScalingSource).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "checker/package/rcp_check.h"

namespace mlperf::package {

struct RunTime {
  std::string path;
  bool compliant = false;         // the compliance verdict for the run (a failing run is dropped)
  std::optional<double> minutes;  // RunMinutes; unset if it could not be measured
};

enum class ScalingSource {
  // Default: the tree as package_checker leaves it (the official order,
  // package_checker then result_summarizer, on a fresh copy).
  kAfterPackageChecker,
  // The tree as it is now: the summarizer run first on an untouched copy.
  kExistingFile,
};

// The scaling factor the summarizer applies. `existing` is the directory's
// current scaling.json factor (nullopt if none). `rcp` is the RCP verdict
// package_checker computes for the directory, or nullopt when it does not run
// the RCP check there (open division, a skipped benchmark).
double SummarizerScalingFactor(ScalingSource source, std::optional<double> existing,
                               const absl::StatusOr<RcpVerdict>* rcp);

struct BenchmarkScore {
  int dropped_runs = 0;  // non-compliant or unmeasurable runs
  int max_dropped = 1;   // 4 for unet3d
  // Olympic average before scaling; nullopt when too many runs were dropped
  // (the summarizer's "CRITICAL ERROR ... NOT correct") or none remain.
  std::optional<double> olympic_mean;
  double scaling_factor = 1.0;
  std::optional<double> score;  // olympic_mean * scaling_factor
  std::vector<bool> counted;    // per run given: whether the olympic mean includes it
};

BenchmarkScore ScoreBenchmark(const std::string& benchmark, const std::vector<RunTime>& runs,
                              double scaling_factor);

// The scaling_factor member of a scaling.json text; an error says why not.
absl::StatusOr<double> ParseScalingJson(const std::string& text, const std::string& path);

}  // namespace mlperf::package
