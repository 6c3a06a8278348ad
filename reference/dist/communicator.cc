#include "reference/dist/communicator.h"

#include <algorithm>
#include <cstring>

#include "base/check.h"

namespace mlperf::dist {
namespace {

class SingleProcess final : public Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 1; }
  void AllReduceSum(float*, int64_t) override {}
  void AllReduceAverage(float*, int64_t) override {}
  void Broadcast(float*, int64_t, int root) override { MLPERF_CHECK(root == 0); }
  std::unique_ptr<Communicator> Split(int, int) override {
    return std::make_unique<SingleProcess>();
  }
  // Host buffers: a sharded model of one rank exchanges nothing, so only
  // host callers (tests) reach here.
  void AllToAll(const void* send, std::span<const int64_t> send_bytes, void* recv,
                std::span<const int64_t> recv_bytes) override {
    MLPERF_CHECK(send_bytes.size() == 1 && recv_bytes.size() == 1 &&
                 send_bytes[0] == recv_bytes[0] && send_bytes[0] >= 0);
    if (send_bytes[0] > 0) std::memcpy(recv, send, static_cast<size_t>(send_bytes[0]));
  }
  void AllGather(const void* send, void* recv, int64_t bytes) override {
    MLPERF_CHECK(bytes >= 0);
    if (bytes > 0) std::memcpy(recv, send, static_cast<size_t>(bytes));
  }
  void ReduceScatterSum(const float* send, float* recv, int64_t count) override {
    MLPERF_CHECK(count >= 0);
    if (count > 0) std::memcpy(recv, send, static_cast<size_t>(count) * sizeof(float));
  }
  void Barrier() override {}
};

}  // namespace

std::unique_ptr<Communicator> MakeSingleProcessCommunicator() {
  return std::make_unique<SingleProcess>();
}

std::vector<Bucket> PlanBuckets(int64_t count, int64_t bucket_elements) {
  const Bucket whole = {0, count};
  return PlanBuckets(std::span(&whole, 1), bucket_elements);
}

std::vector<Bucket> PlanBuckets(std::span<const Bucket> ranges, int64_t bucket_elements) {
  MLPERF_CHECK(bucket_elements > 0);
  std::vector<Bucket> buckets;
  for (auto r = ranges.rbegin(); r != ranges.rend(); ++r) {
    MLPERF_CHECK(r->begin <= r->end && (r + 1 == ranges.rend() || (r + 1)->end <= r->begin));
    for (int64_t end = r->end; end > r->begin; end -= bucket_elements)
      buckets.push_back({std::max(r->begin, end - bucket_elements), end});
  }
  return buckets;
}

void AllReduceGradients(Communicator& comm, float* grads, const std::vector<Bucket>& buckets) {
  if (comm.world_size() == 1) return;
  for (const Bucket& b : buckets) comm.AllReduceAverage(grads + b.begin, b.end - b.begin);
}

}  // namespace mlperf::dist
