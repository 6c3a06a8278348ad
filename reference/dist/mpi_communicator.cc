#include "reference/dist/mpi_communicator.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "base/check.h"

namespace mlperf::dist {
namespace {

class Mpi final : public Communicator {
 public:
  Mpi() {
    int initialized = 0;
    MPI_CHECK(MPI_Initialized(&initialized));
    if (!initialized) {
      int provided = 0;
      MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
      owns_mpi_ = true;
    }
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank_));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size_));
  }
  // A communicator split from the world (owned, freed on destruction).
  explicit Mpi(MPI_Comm comm) : comm_(comm) {
    MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
    MPI_CHECK(MPI_Comm_size(comm_, &size_));
  }
  ~Mpi() override {
    if (comm_ != MPI_COMM_WORLD) MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  void AllReduceSum(float* data, int64_t count) override {
    MLPERF_CHECK(count <= INT32_MAX);
    MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_));
  }
  void AllReduceAverage(float* data, int64_t count) override {
    AllReduceSum(data, count);
    const float inv = 1.0f / static_cast<float>(size_);
    for (int64_t i = 0; i < count; ++i) data[i] *= inv;
  }
  void Broadcast(float* data, int64_t count, int root) override {
    MLPERF_CHECK(count <= INT32_MAX);
    MPI_CHECK(MPI_Bcast(data, static_cast<int>(count), MPI_FLOAT, root, comm_));
  }
  void AllToAll(const void* send, std::span<const int64_t> send_bytes, void* recv,
                std::span<const int64_t> recv_bytes) override {
    std::vector<int> send_counts, send_at, recv_counts, recv_at;
    Layout(send_bytes, send_counts, send_at);
    Layout(recv_bytes, recv_counts, recv_at);
    MPI_CHECK(MPI_Alltoallv(send, send_counts.data(), send_at.data(), MPI_BYTE, recv,
                            recv_counts.data(), recv_at.data(), MPI_BYTE, comm_));
  }
  void AllGather(const void* send, void* recv, int64_t bytes) override {
    MLPERF_CHECK_MSG(bytes >= 0 && bytes * size_ <= INT32_MAX, "MPI all-gather over 2 GiB");
    MPI_CHECK(MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes),
                            MPI_BYTE, comm_));
  }
  void ReduceScatterSum(const float* send, float* recv, int64_t count) override {
    MLPERF_CHECK_MSG(count >= 0 && count * size_ <= INT32_MAX, "MPI reduce-scatter over 2^31");
    MPI_CHECK(
        MPI_Reduce_scatter_block(send, recv, static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm_));
  }
  void Barrier() override { MPI_CHECK(MPI_Barrier(comm_)); }
  std::unique_ptr<Communicator> Split(int colour, int key) override {
    MLPERF_CHECK(colour >= 0);
    MPI_Comm part = MPI_COMM_NULL;
    MPI_CHECK(MPI_Comm_split(comm_, colour, key, &part));
    return std::make_unique<Mpi>(part);
  }

 private:
  // MPI's int counts and displacements of blocks laid back to back.
  void Layout(std::span<const int64_t> bytes, std::vector<int>& counts,
              std::vector<int>& at) const {
    MLPERF_CHECK(static_cast<int>(bytes.size()) == size_);
    int64_t offset = 0;
    for (const int64_t b : bytes) {
      MLPERF_CHECK_MSG(b >= 0 && offset + b <= INT32_MAX, "MPI all-to-all over 2 GiB");
      counts.push_back(static_cast<int>(b));
      at.push_back(static_cast<int>(offset));
      offset += b;
    }
  }

  MPI_Comm comm_ = MPI_COMM_WORLD;
  int rank_ = 0;
  int size_ = 1;
  bool owns_mpi_ = false;
};

}  // namespace

std::unique_ptr<Communicator> MakeMpiCommunicator() { return std::make_unique<Mpi>(); }

std::unique_ptr<Communicator> MakeMpiSubCommunicator(bool member) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank, &sub));
  if (sub == MPI_COMM_NULL) return nullptr;
  return std::make_unique<Mpi>(sub);
}

}  // namespace mlperf::dist
