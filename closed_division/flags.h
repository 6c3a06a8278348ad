// run_closed's command line: Abseil flags, read with our exit codes (a bad
// flag is a usage error, exit 2, never Abseil's exit 1).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "closed_division/config.h"
#include "closed_division/registry.h"

namespace mlperf::closed {

// What the command line asks for: options, or --help.
struct CommandLine {
  bool help = false;
  bool version = false;
  RunnerOptions options;
};

// Errors are one line, e.g. "unknown flag '--gpu' (see --help)".
absl::StatusOr<CommandLine> ParseCommandLine(int argc, char** argv);

// The --help text, listing the registered benchmarks.
std::string UsageText(const BenchmarkRegistry& registry);

}  // namespace mlperf::closed
