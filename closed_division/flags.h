// run_closed's command line: Abseil flags, read with our exit codes (a bad
// flag is a usage error, exit 2, never Abseil's exit 1).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "benchmarks/plan.h"
#include "benchmarks/registry.h"

namespace mlperf::closed {

// What the command line asks for: options, or --help, --version, --list.
struct CommandLine {
  bool help = false;
  bool version = false;
  bool list = false;
  benchmarks::RunnerOptions options;
};

// The common flags and every registered benchmark's own; a benchmark flag
// given for another benchmark is an error naming its owner. Errors are one
// line, e.g. "unknown flag '--gpu' (see --help)".
absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv,
                                             const benchmarks::BenchmarkRegistry& registry);

// The --help text, listing the registered benchmarks and their flags.
std::string UsageText(const benchmarks::BenchmarkRegistry& registry);

}  // namespace mlperf::closed
