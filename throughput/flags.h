// run_benchmark's command line: Abseil flags read with the suite's exit
// codes, plus the short spellings of the field's benchmark scripts.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "benchmarks/registry.h"
#include "throughput/options.h"

namespace mlperf::throughput {

struct CommandLine {
  bool help = false;
  bool version = false;
  BenchOptions options;
};

// Errors are one line, e.g. "--warmup=100 must be less than --iters=100 ...".
// The short spellings of DeepLearningExamples' benchmark.py are accepted:
// -n (--ngpus), -b (--batch-sizes, --bs), -i (--benchmark-iters), -w, -o (--output).
absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv);

std::string UsageText(const benchmarks::BenchmarkRegistry& registry);

}  // namespace mlperf::throughput
