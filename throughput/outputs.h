// Writing a job's reports: each file whole (base/output.h), so that an
// interrupted or failed job leaves the last complete version of every report
// and no report replaces a device, a link or an input.
#pragma once

#include "absl/status/status.h"
#include "base/output.h"
#include "throughput/report.h"

namespace mlperf::throughput {

// The JSON report, DLLogger lines, Markdown and charts the options ask for.
absl::Status WriteOutputs(const Job& job);

// Refuses outputs that could not be written (a missing folder, a path that
// is a folder) or that name an input (--data, the cache) or one another,
// before anything is measured; creates the --plot folder. The guard keeps
// the claimed files locked against other processes while it lives.
absl::Status CheckOutputs(const BenchOptions& options, base::OutputGuard& guard);

}  // namespace mlperf::throughput
