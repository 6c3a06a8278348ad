// A training step's device work recorded once and replayed (a CUDA graph on
// the CUDA backend). The CPU has nothing to record: there every step runs
// as it is queued, and the trainer never builds one.
#pragma once

#include <cstdint>
#include <functional>

namespace mlperf::ops {

class DeviceGraph {
 public:
  DeviceGraph() = default;
  ~DeviceGraph();
  DeviceGraph(const DeviceGraph&) = delete;
  DeviceGraph& operator=(const DeviceGraph&) = delete;

  // Records what `queue` puts on the compute stream (and on streams that
  // fork from it and join it again); nothing runs. `queue` must not read
  // anything back, synchronize or allocate. False, with nothing recorded,
  // when device memory moved while it was queued (the recording would be
  // stale at once).
  bool Capture(const std::function<void()>& queue);
  // Queues the recorded work once more on the compute stream.
  void Replay();
  // Recorded, and no device memory it reads without a tensor naming it
  // (scratch buffers, the optimizers' chunk table) has moved since.
  bool Current() const;
  void Reset();
  // How many times device memory that a recording reads without a tensor
  // naming it has moved on this thread (0 without CUDA).
  static uint64_t ResourceGeneration();

 private:
  void* exec_ = nullptr;  // cudaGraphExec_t
  uint64_t generation_ = 0;
};

}  // namespace mlperf::ops
