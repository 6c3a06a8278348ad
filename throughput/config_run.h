// One configuration measured by the processes of this launch: the benchmark's
// own model, trainer and data pipeline (as run_closed builds them) at the
// configuration's batch per device and precision, timed by TimeWindows.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "benchmarks/benchmark.h"
#include "benchmarks/prepare_data.h"
#include "runtime/process_setup.h"
#include "throughput/options.h"
#include "throughput/result.h"

namespace mlperf::throughput {

// The benchmark configured for `config` on `world_size` processes, with the
// checks that make a measurement meaningful: the batch fits a process
// without gradient accumulation, and with real data the measured steps fit
// in an epoch (training) or an evaluation pass (inference). Errors are usage
// errors.
absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> ConfigureFor(
    const benchmarks::Benchmark& benchmark, const BenchOptions& options, const Config& config,
    int world_size, const benchmarks::ProcessShare& share);

// Measures `config` on every process of `comms` (collective: every rank
// calls it). Rank 0's result holds every rank's steps; a failure on any
// process is a result with ok = false and the error.
ConfigResult RunConfig(const benchmarks::Benchmark& benchmark, const BenchOptions& options,
                       const Config& config, const runtime::RunComms& comms,
                       const benchmarks::ProcessShare& share);

}  // namespace mlperf::throughput
