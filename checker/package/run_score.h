// A run's time to train as the result summarizer measures it (spec 8.1):
// minutes from run_start to run_stop, from the logged time_ms values.
#pragma once

#include "absl/status/statusor.h"
#include "logging/mllog_parser.h"

namespace mlperf::package {

// Both markers are taken at the first point where each has been seen (so a
// repeated run_start before the first run_stop moves the start), then
// (stop - start) / 60 / 1000 in that order of operations. An error names the
// missing marker, as the summarizer's ValueError does ("run_start not
// recorded"); the summarizer counts such a run as dropped. A run_stop before
// run_start is OutOfRange: the summarizer would score the negative time, we
// fail the run instead.
absl::StatusOr<double> RunMinutes(const mllog::ParsedLog& log);

}  // namespace mlperf::package
