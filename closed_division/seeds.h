// Run seeds. The closed-division rules allow seeds from the clock or
// /dev/urandom only, and the seed checker rejects two runs that log the same
// seed from the same source line, so every run draws its own.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "reference/dist/communicator.h"

namespace mlperf::closed {

// A seed for the next run, the same on every rank (rank 0 draws it and
// broadcasts it). `fixed` >= 0 gives fixed + run (reproductions); otherwise
// 32 bits from /dev/urandom, redrawn while it equals one in `used`.
absl::StatusOr<uint64_t> NextRunSeed(int64_t fixed, int run, const std::vector<uint64_t>& used,
                                     dist::Communicator& comm);

}  // namespace mlperf::closed
