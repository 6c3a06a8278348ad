// What one configuration measured, as the worker processes hand it to the
// driver (JSON) and as the reports read it: the windows' wall times, every
// timed step of every process, the memory high-water mark.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "throughput/options.h"
#include "throughput/stats.h"

namespace mlperf::throughput {

struct ConfigResult {
  Config config;
  bool ok = false;
  std::string error;  // why not ok: one line
  // Per window (repeat): wall time of the slowest process and when it began
  // (Unix seconds, rank 0), and the samples every process together processed.
  std::vector<double> window_seconds, window_start_unix;
  int64_t samples_per_window = 0;
  // step_seconds[rank][repeat * iters + i]: each timed step.
  std::vector<std::vector<double>> step_seconds;
  int64_t peak_memory_bytes = 0;  // the largest process's (or device's)
  std::string memory_kind;        // what peak_memory_bytes measures

  // samples_per_window / window_seconds, one per window.
  std::vector<double> Throughputs() const;
  Spread ThroughputSpread() const;
  // Every timed step of every process.
  std::vector<double> AllSteps() const;
};

json::Value ToJson(const ConfigResult& r);
absl::StatusOr<ConfigResult> ResultFromJson(const json::Value& v);

}  // namespace mlperf::throughput
