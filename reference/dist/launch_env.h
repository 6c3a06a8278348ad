// Where this process sits in a multi-process launch, read from the launcher's
// environment, and the small TCP rendezvous that lets rank 0 hand a blob (an
// ncclUniqueId) to every other rank without MPI (Slurm/torchrun style, on
// MASTER_ADDR:MASTER_PORT).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::dist {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  // Which launchers' variables were found, e.g. "OpenMPI" or "Slurm+torchrun";
  // "none" for a plain single process.
  std::string source = "none";
};

// Reads OMPI_COMM_WORLD_{RANK,SIZE,LOCAL_RANK} (OpenMPI), PMI_{RANK,SIZE}
// with MPI_LOCALRANKID or PMI_LOCAL_RANK (MPICH/Hydra, Intel MPI),
// SLURM_{PROCID,NTASKS,LOCALID} (srun) and RANK/WORLD_SIZE/LOCAL_RANK
// (torchrun). Several launchers may be present at once (srun around
// torchrun-style variables); they must then agree. Errors name the variable:
// a value that is not an integer, a rank without its size, rank >= size, or
// two launchers that disagree. Without a local rank, local_rank = rank (one
// node). No variables at all: a single process.
absl::StatusOr<LaunchEnv> ReadLaunchEnv();
// The same with an injectable lookup (returns nullptr for unset variables).
absl::StatusOr<LaunchEnv> ReadLaunchEnv(const std::function<const char*(const char*)>& lookup);

// Rank 0's side: listen on `port` (all interfaces) and send `blob` to
// `clients` connections, each checked with a magic prefix; gives up with
// DeadlineExceeded when not all clients arrived within `timeout`.
absl::Status ServeBlob(uint16_t port, std::string_view blob, int clients,
                       std::chrono::milliseconds timeout);
// The other ranks: connect to host:port (retrying while rank 0 is not yet
// listening) and receive exactly `bytes` bytes, within `timeout` (also when
// rank 0's link is silent: each connect is bounded by the deadline).
absl::StatusOr<std::string> FetchBlob(const std::string& host, uint16_t port, size_t bytes,
                                      std::chrono::milliseconds timeout);

// Both sides in one call: rank 0 returns `blob` after serving it to
// world_size - 1 ranks; the others return what they fetched.
absl::StatusOr<std::string> ShareFromRankZero(const LaunchEnv& env, const std::string& host,
                                              uint16_t port, std::string_view blob, size_t bytes,
                                              std::chrono::milliseconds timeout);
// Whether a TCP connection to ipv4:port opens within `timeout` (the kernel's
// retries on a silent link are not waited for): 0, or the errno that ended
// the attempt (ETIMEDOUT, ECONNREFUSED, ...). The connection is closed.
int ConnectWithin(const std::string& ipv4, uint16_t port, std::chrono::milliseconds timeout);

// MASTER_ADDR and MASTER_PORT from the environment (torchrun's names).
absl::StatusOr<std::pair<std::string, uint16_t>> ReadMasterAddress();

}  // namespace mlperf::dist
