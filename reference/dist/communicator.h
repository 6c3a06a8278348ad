// Data-parallel communication behind one interface: a single process, MPI
// on the CPU (OpenMPI), or NCCL on GPUs. Buffers live where the backend
// expects them: host memory for MPI, device memory for NCCL.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace mlperf::dist {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // In place, over all ranks.
  virtual void AllReduceSum(float* data, int64_t count) = 0;
  virtual void AllReduceAverage(float* data, int64_t count) = 0;
  virtual void Broadcast(float* data, int64_t count, int root) = 0;
  // Block r of `send` (send_bytes[r] bytes; the blocks back to back in rank
  // order) goes to rank r, which receives it as block `rank()` of its
  // `recv` (recv_bytes[r] from rank r). Both spans have world_size()
  // entries; what rank a sends b is what b expects from a. Not in place.
  virtual void AllToAll(const void* send, std::span<const int64_t> send_bytes, void* recv,
                        std::span<const int64_t> recv_bytes) = 0;
  // Every rank's `bytes` bytes of `send` land on every rank, rank r's as
  // block r of `recv` (world_size() * bytes). Not in place.
  virtual void AllGather(const void* send, void* recv, int64_t bytes) = 0;
  // `send` holds world_size() blocks of `count` floats; block rank() of
  // their sum over the ranks lands in `recv` (count floats). Not in place.
  virtual void ReduceScatterSum(const float* send, float* recv, int64_t count) = 0;
  virtual void Barrier() = 0;
  // Whether the collectives on device buffers can be recorded into a CUDA
  // graph (ops::DeviceGraph): only what never touches the host. A world of
  // one has nothing to record.
  virtual bool CollectivesCapturable() const { return world_size() == 1; }
  // Collective: the ranks that pass the same `colour` form a communicator of
  // their own, ranked by `key` (MPI_Comm_split). Null where the backend
  // cannot split (NCCL so far).
  virtual std::unique_ptr<Communicator> Split(int colour, int key) {
    (void)colour;
    (void)key;
    return nullptr;
  }
};

// World of one: every collective is the identity.
std::unique_ptr<Communicator> MakeSingleProcessCommunicator();

// Contiguous ranges of the flat gradient arena, each at least
// `bucket_elements` long (except the last), ordered from the end of the arena
// to its start: parameters are laid out in forward order, so their gradients
// are complete in reverse and a bucket can be reduced as soon as it is ready.
struct Bucket {
  int64_t begin = 0;
  int64_t end = 0;
};
std::vector<Bucket> PlanBuckets(int64_t count, int64_t bucket_elements);
// The same over ascending, disjoint ranges of the arena (what is all-reduced
// when some parameters are sharded): no bucket spans two ranges.
std::vector<Bucket> PlanBuckets(std::span<const Bucket> ranges, int64_t bucket_elements);

// Averages the gradients over ranks, one collective per bucket.
void AllReduceGradients(Communicator& comm, float* grads, const std::vector<Bucket>& buckets);

}  // namespace mlperf::dist
