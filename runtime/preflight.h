// run_closed --preflight: a short collective check before the first run.
// Every rank's link bandwidth, then all four collectives at two sizes
// (results checked; runtime/collective_bench.h); a rank far below the
// others stops the job before anything is written, naming its node.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "runtime/process_setup.h"

namespace mlperf::runtime {

// Collective. `say` gets the summary lines (called on rank 0 only).
// FailedPrecondition, the same on every rank, when a result was wrong or a
// rank's bandwidth is below min_fraction x the median over the ranks (0
// turns the comparison off).
absl::Status RunPreflight(const RunComms& comms, double min_fraction,
                          const std::function<void(const std::string&)>& say);

}  // namespace mlperf::runtime
