// One run_closed invocation of any registered benchmark: the package frame
// (no overwrite, system description, README), the data, then the required
// number of seeded runs, each committed to result_<i>.txt only when its log
// is complete, and the closing summary. Returns the exit code (0 runs done,
// 1 a run or write failed, was interrupted, or too many runs missed the
// target, 2 usage or input error).
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "closed_division/benchmark.h"
#include "reference/dist/communicator.h"

namespace mlperf::closed {

struct RunComms {
  // Control messages and, on the CPU, gradients (host buffers).
  dist::Communicator* control = nullptr;
  // GPU runs: the communicator on device buffers and the stream it queues on.
  dist::Communicator* gradients = nullptr;
  void* stream = nullptr;
};

int RunBenchmark(const Benchmark& benchmark, const RunnerOptions& options, const RunComms& comms,
                 const ProcessShare& share);

// Writes a demonstration's generated data set, or prepares a raw data set,
// into the cache (setup.PrepareData) under a lock of its own beside it, so
// that invocations sharing a cache write it once and the others wait; data
// read where it is needs neither. `info` hears what happens.
absl::Status PrepareDataOnce(const BenchmarkSetup& setup,
                             const std::function<void(const std::string&)>& info);

// How to check the package: our checker and the official one.
std::string CheckCommands(const BenchmarkInfo& info, const RunPlan& plan,
                          const std::string& org_dir);

}  // namespace mlperf::closed
