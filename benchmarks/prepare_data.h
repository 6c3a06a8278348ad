// A benchmark's data made ready once per cache: what run_closed and
// run_benchmark do before they build any model.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "benchmarks/benchmark.h"

namespace mlperf::benchmarks {

// Writes a demonstration's generated data set, or prepares a raw data set,
// into the cache (setup.PrepareData) under a lock of its own beside it, so
// that invocations sharing a cache write it once and the others wait; data
// read where it is needs neither; on the plan's compute threads (which it
// leaves set). `info` hears what happens.
absl::Status PrepareDataOnce(const BenchmarkSetup& setup,
                             const std::function<void(const std::string&)>& info);

}  // namespace mlperf::benchmarks
