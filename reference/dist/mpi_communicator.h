// MPI communicator for CPU data parallelism (OpenMPI; run under mpirun).
#pragma once

#include <memory>

#include "reference/dist/communicator.h"

namespace mlperf::dist {

// Initialises MPI if nobody has yet (and then finalises it on destruction).
std::unique_ptr<Communicator> MakeMpiCommunicator();

// Collective over MPI's world (initialised): the ranks with `member` form a
// communicator of their own, in world order; the others get nullptr.
std::unique_ptr<Communicator> MakeMpiSubCommunicator(bool member);

}  // namespace mlperf::dist
