// Collectives on host buffers over a communicator that only works on device
// buffers (NCCL). run_closed's control messages (seeds, agreement flags,
// interrupt checks, eval counts) are a few floats on the host; with one
// process per GPU and no MPI they travel through a small device buffer.
#pragma once

#include <memory>

#include "reference/dist/communicator.h"
#include "reference/kernels/device_runtime.h"

namespace mlperf::dist {

// `device_comm` must outlive the result; `comm_stream` is the stream it
// queues on (NcclOptions::stream). Calls of more than `max_count` floats go
// through the staging buffer in pieces.
std::unique_ptr<Communicator> MakeHostStagedCommunicator(Communicator& device_comm,
                                                         ops::Stream comm_stream,
                                                         int64_t max_count = 4096);

}  // namespace mlperf::dist
