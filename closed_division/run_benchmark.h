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

#include "benchmarks/benchmark.h"
#include "reference/dist/communicator.h"
#include "runtime/process_setup.h"

namespace mlperf::closed {

int RunBenchmark(const benchmarks::Benchmark& benchmark, const benchmarks::RunnerOptions& options,
                 const runtime::RunComms& comms, const benchmarks::ProcessShare& share);

// How to check the package: our checker and the official one.
std::string CheckCommands(const benchmarks::RunPlan& plan, const std::string& org_dir);

}  // namespace mlperf::closed
