// Writing a job's reports: each file whole (through a temporary file and a
// rename), so that an interrupted or failed job leaves the last complete
// version of every report.
#pragma once

#include "absl/status/status.h"
#include "throughput/report.h"

namespace mlperf::throughput {

// The JSON report, DLLogger lines, Markdown and charts the options ask for.
absl::Status WriteOutputs(const Job& job);

// Refuses outputs that could not be written (a missing folder, a path that
// is a folder) before anything is measured; creates the --plot folder.
absl::Status CheckOutputs(const BenchOptions& options);

}  // namespace mlperf::throughput
