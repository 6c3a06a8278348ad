#include "reference/dist/host_staged_comm.h"

#include <algorithm>
#include <optional>

#include "base/check.h"
#include "reference/core/arena.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::dist {
namespace {

using core::Device;

class HostStaged final : public Communicator {
 public:
  HostStaged(Communicator& device_comm, ops::Stream comm_stream, int64_t max_count)
      : comm_(device_comm), stream_(comm_stream), max_count_(max_count) {
    buffer_.emplace(Device::kCuda, static_cast<size_t>(max_count) * sizeof(float));
    staging_ = buffer_->Allocate({max_count}).f32();
  }
  int rank() const override { return comm_.rank(); }
  int world_size() const override { return comm_.world_size(); }
  void AllReduceSum(float* data, int64_t count) override {
    Run(data, count, [&](float* d, int64_t n) { comm_.AllReduceSum(d, n); });
  }
  void AllReduceAverage(float* data, int64_t count) override {
    Run(data, count, [&](float* d, int64_t n) { comm_.AllReduceAverage(d, n); });
  }
  void Broadcast(float* data, int64_t count, int root) override {
    Run(data, count, [&](float* d, int64_t n) { comm_.Broadcast(d, n, root); });
  }
  // Through device buffers of the call's size (control messages never
  // exchange blocks; this is for completeness, not speed).
  void AllToAll(const void* send, std::span<const int64_t> send_bytes, void* recv,
                std::span<const int64_t> recv_bytes) override {
    int64_t out = 0, in = 0;
    for (const int64_t b : send_bytes) out += b;
    for (const int64_t b : recv_bytes) in += b;
    Staged(send, out, recv, in, [&](const void* d_send, void* d_recv) {
      comm_.AllToAll(d_send, send_bytes, d_recv, recv_bytes);
    });
  }
  void AllGather(const void* send, void* recv, int64_t bytes) override {
    Staged(send, bytes, recv, bytes * world_size(),
           [&](const void* d_send, void* d_recv) { comm_.AllGather(d_send, d_recv, bytes); });
  }
  void ReduceScatterSum(const float* send, float* recv, int64_t count) override {
    const int64_t bytes = count * static_cast<int64_t>(sizeof(float));
    Staged(send, bytes * world_size(), recv, bytes, [&](const void* d_send, void* d_recv) {
      comm_.ReduceScatterSum(static_cast<const float*>(d_send), static_cast<float*>(d_recv), count);
    });
  }
  void Barrier() override { comm_.Barrier(); }

 private:
  // Per piece: upload on the compute stream, collective on the
  // communicator's stream after it, download after the collective; the
  // download waits.
  template <typename Collective>
  void Run(float* data, int64_t count, Collective collective) {
    MLPERF_CHECK(count >= 0);
    for (int64_t at = 0; at < count; at += max_count_) {
      const int64_t n = std::min(max_count_, count - at);
      const size_t bytes = static_cast<size_t>(n) * sizeof(float);
      ops::CopyBytes(staging_, Device::kCuda, data + at, Device::kCpu, bytes);
      ops::StreamWaitsFor(stream_, ops::ComputeStream());
      collective(staging_, n);
      ops::StreamWaitsFor(ops::ComputeStream(), stream_);
      ops::CopyBytes(data + at, Device::kCpu, staging_, Device::kCuda, bytes);
    }
  }

  // `out` bytes up to a device buffer, the collective from it into another,
  // `in` bytes back down.
  template <typename Collective>
  void Staged(const void* send, int64_t out, void* recv, int64_t in, Collective collective) {
    core::Arena staging(Device::kCuda, static_cast<size_t>(out + in) + core::Arena::kAlignment);
    auto* d_send = static_cast<std::byte*>(staging.Allocate({out}, core::DType::kU8).data());
    auto* d_recv = static_cast<std::byte*>(staging.Allocate({in}, core::DType::kU8).data());
    ops::CopyBytes(d_send, Device::kCuda, send, Device::kCpu, static_cast<size_t>(out));
    ops::StreamWaitsFor(stream_, ops::ComputeStream());
    collective(d_send, d_recv);
    ops::StreamWaitsFor(ops::ComputeStream(), stream_);
    ops::CopyBytes(recv, Device::kCpu, d_recv, Device::kCuda, static_cast<size_t>(in));
  }

  Communicator& comm_;
  ops::Stream stream_;
  int64_t max_count_;
  std::optional<core::Arena> buffer_;
  float* staging_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> MakeHostStagedCommunicator(Communicator& device_comm,
                                                         ops::Stream comm_stream,
                                                         int64_t max_count) {
  return std::make_unique<HostStaged>(device_comm, comm_stream, max_count);
}

}  // namespace mlperf::dist
