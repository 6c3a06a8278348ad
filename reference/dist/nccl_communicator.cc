#include "reference/dist/nccl_communicator.h"

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <mpi.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "base/check.h"

// NCCL, CUDA and MPI failures after setup are device or programmer errors:
// they name the call, file and line and abort.
namespace mlperf::dist {
namespace {

class Nccl final : public Communicator {
 public:
  Nccl(ncclComm_t comm, int rank, int size, cudaStream_t stream)
      : comm_(comm), rank_(rank), size_(size), stream_(stream) {
    CUDA_CHECK(cudaMalloc(&barrier_, sizeof(float)));
  }
  ~Nccl() override {
    cudaFree(barrier_);
    ncclCommDestroy(comm_);
  }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  void AllReduceSum(float* data, int64_t count) override {
    NCCL_CHECK(
        ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclSum, comm_, stream_));
  }
  // ncclAvg divides on the device inside the collective (NCCL >= 2.10).
  void AllReduceAverage(float* data, int64_t count) override {
    NCCL_CHECK(
        ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclAvg, comm_, stream_));
  }
  void Broadcast(float* data, int64_t count, int root) override {
    MLPERF_CHECK(root >= 0 && root < size_);
    NCCL_CHECK(
        ncclBroadcast(data, data, static_cast<size_t>(count), ncclFloat, root, comm_, stream_));
  }
  // Point-to-point pairs in one group: NCCL runs them as one all-to-all.
  void AllToAll(const void* send, std::span<const int64_t> send_bytes, void* recv,
                std::span<const int64_t> recv_bytes) override {
    MLPERF_CHECK(static_cast<int>(send_bytes.size()) == size_ &&
                 static_cast<int>(recv_bytes.size()) == size_);
    const auto* from = static_cast<const char*>(send);
    auto* to = static_cast<char*>(recv);
    NCCL_CHECK(ncclGroupStart());
    for (int r = 0; r < size_; ++r) {
      if (send_bytes[r] > 0)
        NCCL_CHECK(ncclSend(from, static_cast<size_t>(send_bytes[r]), ncclInt8, r, comm_, stream_));
      if (recv_bytes[r] > 0)
        NCCL_CHECK(ncclRecv(to, static_cast<size_t>(recv_bytes[r]), ncclInt8, r, comm_, stream_));
      from += send_bytes[r];
      to += recv_bytes[r];
    }
    NCCL_CHECK(ncclGroupEnd());
  }
  void AllGather(const void* send, void* recv, int64_t bytes) override {
    NCCL_CHECK(ncclAllGather(send, recv, static_cast<size_t>(bytes), ncclInt8, comm_, stream_));
  }
  void ReduceScatterSum(const float* send, float* recv, int64_t count) override {
    NCCL_CHECK(ncclReduceScatter(send, recv, static_cast<size_t>(count), ncclFloat, ncclSum, comm_,
                                 stream_));
  }
  // A one-element all-reduce, then wait for it: every rank has reached here.
  // NCCL records its collectives into graphs (NCCL >= 2.9).
  bool CollectivesCapturable() const override { return true; }
  void Barrier() override {
    NCCL_CHECK(ncclAllReduce(barrier_, barrier_, 1, ncclFloat, ncclSum, comm_, stream_));
    CUDA_CHECK(cudaStreamSynchronize(stream_));
  }

 private:
  ncclComm_t comm_;
  int rank_;
  int size_;
  cudaStream_t stream_;
  float* barrier_ = nullptr;
};

absl::Status SelectDevice(int local_rank) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
    return absl::FailedPreconditionError("NCCL communicator: no CUDA device");
  if (const cudaError_t e = cudaSetDevice(local_rank % devices); e != cudaSuccess)
    return absl::InternalError(
        fmt::format("cudaSetDevice({}): {}", local_rank % devices, cudaGetErrorString(e)));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Communicator>> InitWithId(const ncclUniqueId& id, int rank, int size,
                                                         const NcclOptions& options) {
  ncclComm_t comm = nullptr;
  if (const ncclResult_t r = ncclCommInitRank(&comm, size, id, rank); r != ncclSuccess)
    return absl::InternalError(
        fmt::format("ncclCommInitRank(rank {} of {}): {}", rank, size, ncclGetErrorString(r)));
  return std::unique_ptr<Communicator>(new Nccl(comm, rank, size, options.stream));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicatorWithMpi(
    const NcclOptions& options) {
  int initialized = 0;
  MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    // Left initialised for the process: NCCL needs no MPI afterwards, and
    // other users (logging, data sharding) may still want it.
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  }
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size));
  // The node-local rank from a shared-memory split of the world.
  MPI_Comm node;
  int local_rank = 0;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
  MPI_CHECK(MPI_Comm_rank(node, &local_rank));
  MPI_CHECK(MPI_Comm_free(&node));
  if (absl::Status s = SelectDevice(local_rank); !s.ok()) return s;
  ncclUniqueId id;
  if (rank == 0) NCCL_CHECK(ncclGetUniqueId(&id));
  MPI_CHECK(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
  return InitWithId(id, rank, size, options);
}

absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicator(const LaunchEnv& env,
                                                                   const std::string& host,
                                                                   uint16_t port,
                                                                   const NcclOptions& options) {
  if (absl::Status s = SelectDevice(env.local_rank); !s.ok()) return s;
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (env.rank == 0) {
    if (const ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess)
      return absl::InternalError(fmt::format("ncclGetUniqueId: {}", ncclGetErrorString(r)));
  }
  absl::StatusOr<std::string> shared =
      ShareFromRankZero(env, host, port, std::string_view(id.internal, sizeof(id.internal)),
                        sizeof(id.internal), options.timeout);
  if (!shared.ok()) return shared.status();
  std::memcpy(id.internal, shared->data(), sizeof(id.internal));
  return InitWithId(id, env.rank, env.world_size, options);
}

absl::StatusOr<std::unique_ptr<Communicator>> MakeNcclCommunicatorFromEnv(
    const NcclOptions& options) {
  absl::StatusOr<LaunchEnv> env = ReadLaunchEnv();
  if (!env.ok()) return env.status();
  if (env->world_size == 1) return MakeNcclCommunicator(*env, "127.0.0.1", 0, options);
  absl::StatusOr<std::pair<std::string, uint16_t>> master = ReadMasterAddress();
  if (!master.ok()) return master.status();
  return MakeNcclCommunicator(*env, master->first, master->second, options);
}

}  // namespace mlperf::dist
