// A CUDA model's per-step uploads of host batches, through pinned memory
// that every host thread fills (ops::ParallelHostCopy): from pageable memory
// the driver copies at a fraction of the bus's speed, and one core's memcpy
// at a fraction of memory's (a batch of 256 ImageNet crops is 154 MB). The
// staging is refilled once the device has read the previous batch out of it
// (an event after its copies), not once the device has finished the step
// that batch feeds: the host stages the next batch while the device trains.
#pragma once

#include <cstddef>
#include <span>

#include "reference/core/tensor.h"
#include "reference/kernels/device_runtime.h"

namespace mlperf::models {

class UploadStaging {
 public:
  // `bytes` of pinned host memory: the most one Upload moves.
  explicit UploadStaging(size_t bytes);
  ~UploadStaging();
  UploadStaging(const UploadStaging&) = delete;
  UploadStaging& operator=(const UploadStaging&) = delete;

  // One host span bound for the device.
  struct Part {
    void* device_dst;
    const void* host_src;
    size_t bytes;
  };
  // Queues the parts' copies on the ops stream of `device`, after waiting
  // for the previous Upload's copies to finish. The host spans may be reused
  // on return.
  void Upload(core::Device device, std::span<const Part> parts);

 private:
  ops::PinnedBuffer staging_;
  ops::Event copied_;  // after the last Upload's copies
};

}  // namespace mlperf::models
