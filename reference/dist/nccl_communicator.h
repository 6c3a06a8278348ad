// NCCL communicator for data parallelism on GPUs: every collective works in
// place on device buffers and is queued on the given CUDA stream (no host
// synchronisation, so it overlaps with the backward; Barrier alone waits).
// The ncclUniqueId travels from rank 0 either over MPI (under mpirun) or
// over the TCP rendezvous of launch_env.h (srun/torchrun, no MPI needed).
#pragma once

#include <cuda_runtime.h>

#include <chrono>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "reference/dist/communicator.h"
#include "reference/dist/launch_env.h"

namespace mlperf::dist {

struct NcclOptions {
  // Stream the collectives are queued on (the training stream; nullptr is the
  // legacy default stream).
  cudaStream_t stream = nullptr;
  // How long the rendezvous waits for the other ranks.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

// Under mpirun: MPI is initialised if nobody has yet; rank 0 creates the id
// and MPI_Bcast's it. The device is local_rank % device count.
absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicatorWithMpi(
    const NcclOptions& options);

// Without MPI: rank, world size and local rank from `env` (ReadLaunchEnv),
// the id served by rank 0 on host:port (MASTER_ADDR/MASTER_PORT).
absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(const LaunchEnv& env,
                                                                   const std::string& host,
                                                                   uint16_t port,
                                                                   const NcclOptions& options);

// The same, reading everything from the environment.
absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicatorFromEnv(
    const NcclOptions& options);

}  // namespace mlperf::dist
