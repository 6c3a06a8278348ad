// MPI communicator for CPU data parallelism (OpenMPI; run under mpirun).
#pragma once

#include <memory>

#include "reference/dist/communicator.h"

namespace mlperf::dist {

// Initialises MPI if nobody has yet (and then finalises it on destruction).
std::unique_ptr<Communicator> MakeMpiCommunicator();

}  // namespace mlperf::dist
