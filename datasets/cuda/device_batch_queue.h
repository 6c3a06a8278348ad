// The GPU data path run ahead of training: an AheadQueue thread takes the
// loader's encoded batches and decodes them on the device (DeviceImageDecoder,
// on a stream of its own), `depth` batches ahead, so that decoding overlaps
// the training step instead of waiting between steps.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/ahead_queue.h"
#include "datasets/cuda/device_image_decoder.h"
#include "datasets/image_loader.h"

namespace mlperf::datasets::cuda {

struct DeviceBatch {
  const float* pixels = nullptr;  // on the device: batch_size x 3 x image_size^2
  std::vector<int32_t> labels;    // on the host, as ImageBatch
  int count = 0;
  int64_t epoch = 0;
};

class DeviceBatchQueue {
 public:
  // `loader` must hand out ImageOutput::kEncoded batches of `split`; the
  // decoding runs on the calling thread's CUDA device.
  static absl::StatusOr<std::unique_ptr<DeviceBatchQueue>> Create(
      std::unique_ptr<ImageLoader> loader, Split split, const DeviceDecoderOptions& options,
      int depth = 2);
  ~DeviceBatchQueue();
  DeviceBatchQueue(const DeviceBatchQueue&) = delete;
  DeviceBatchQueue& operator=(const DeviceBatchQueue&) = delete;

  int64_t size() const { return loader_->size(); }
  // Validation: begins a pass (abandoning the one in progress), as the loader.
  void StartEval();
  // The next batch, as ImageLoader::Next. It takes back the previous batch's
  // pixels: whatever reads them (a copy on another stream) must be finished.
  absl::StatusOr<bool> Next(DeviceBatch* batch);

  const DeviceImageDecoder& decoder() const { return *decoder_; }

 private:
  struct Slot {
    float* pixels = nullptr;  // allocated at the first batch, when its size is known
    size_t capacity = 0;
    ImageBatch images;
  };

  DeviceBatchQueue(std::unique_ptr<ImageLoader> loader, Split split,
                   std::unique_ptr<DeviceImageDecoder> decoder, int depth);
  absl::StatusOr<bool> Fill(Slot& slot);

  std::unique_ptr<ImageLoader> loader_;
  const Split split_;
  std::unique_ptr<DeviceImageDecoder> decoder_;
  int device_ = 0;
  void* stream_ = nullptr;  // cudaStream_t, non-blocking
  std::vector<Slot> slots_;
  std::unique_ptr<AheadQueue> ahead_;  // last: its thread stops before the rest goes
};

}  // namespace mlperf::datasets::cuda
