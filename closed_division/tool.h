// run_closed as a function of its registry: what the binary's main runs over
// the built-in benchmarks, and what a test runs over a registry of its own.
#pragma once

#include "benchmarks/registry.h"

namespace mlperf::closed {

// Reads the command line and the launcher, builds the communicators, and
// runs the benchmark the command line names (RunBenchmark). Returns the exit
// code (0 runs done; 1 a run or write failed, the invocation was
// interrupted, or more runs missed the target than olympic scoring allows;
// 2 usage or input error).
int RunClosedTool(int argc, char** argv, const benchmarks::BenchmarkRegistry& registry);

}  // namespace mlperf::closed
