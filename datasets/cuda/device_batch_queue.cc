#include "datasets/cuda/device_batch_queue.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include <optional>
#include <utility>

namespace mlperf::datasets::cuda {

absl::StatusOr<std::unique_ptr<DeviceBatchQueue>> DeviceBatchQueue::Create(
    std::unique_ptr<ImageLoader> loader, Split split, const DeviceDecoderOptions& options,
    int depth) {
  if (depth < 1) return absl::InvalidArgumentError("DeviceBatchQueue: depth < 1");
  absl::StatusOr<std::unique_ptr<DeviceImageDecoder>> decoder = DeviceImageDecoder::Create(options);
  if (!decoder.ok()) return decoder.status();
  std::unique_ptr<DeviceBatchQueue> q(
      new DeviceBatchQueue(std::move(loader), split, *std::move(decoder), depth));
  cudaStream_t stream = nullptr;
  // Non-blocking: the decode neither waits for nor holds up the training stream.
  if (cudaGetDevice(&q->device_) != cudaSuccess ||
      cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
    return absl::InternalError("DeviceBatchQueue: cannot create a CUDA stream");
  }
  q->stream_ = stream;
  DeviceBatchQueue* self = q.get();
  q->ahead_ = std::make_unique<AheadQueue>(
      depth,
      AheadQueue::Hooks{
          .thread_start = [self] { cudaSetDevice(self->device_); },  // per thread
          .fill = [self](int slot) { return self->Fill(self->slots_[slot]); },
          .restart = [self] { self->loader_->StartEval(); },
      },
      /*wait_for_restart=*/split == Split::kVal);
  return q;
}

DeviceBatchQueue::DeviceBatchQueue(std::unique_ptr<ImageLoader> loader, Split split,
                                   std::unique_ptr<DeviceImageDecoder> decoder, int depth)
    : loader_(std::move(loader)),
      split_(split),
      decoder_(std::move(decoder)),
      slots_(static_cast<size_t>(depth) + 1) {}

DeviceBatchQueue::~DeviceBatchQueue() {
  ahead_.reset();
  for (Slot& s : slots_) {
    if (s.pixels != nullptr) cudaFree(s.pixels);
  }
  if (stream_ != nullptr) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void DeviceBatchQueue::StartEval() {
  if (split_ == Split::kVal) ahead_->Restart();  // a training stream has no passes
}

absl::StatusOr<bool> DeviceBatchQueue::Next(DeviceBatch* batch) {
  absl::StatusOr<std::optional<int>> slot = ahead_->Next();
  if (!slot.ok()) return slot.status();
  if (!slot->has_value()) return false;
  const Slot& s = slots_[static_cast<size_t>(**slot)];
  batch->pixels = s.pixels;
  batch->labels = s.images.labels;
  batch->count = s.images.count;
  batch->epoch = s.images.epoch;
  return true;
}

absl::StatusOr<bool> DeviceBatchQueue::Fill(Slot& slot) {
  absl::StatusOr<bool> got = loader_->Next(&slot.images);
  if (!got.ok() || !*got) return got;
  const size_t side = static_cast<size_t>(decoder_->image_size());
  const size_t bytes = slot.images.encoded.size() * 3 * side * side * sizeof(float);
  if (bytes > slot.capacity) {
    if (slot.pixels != nullptr) cudaFree(slot.pixels);
    slot.pixels = nullptr;
    slot.capacity = 0;
    if (cudaMalloc(&slot.pixels, bytes) != cudaSuccess) {
      return absl::ResourceExhaustedError(
          fmt::format("device decoding: cannot allocate {} bytes for a batch", bytes));
    }
    slot.capacity = bytes;
  }
  if (absl::Status s =
          decoder_->Decode(slot.images, slot.pixels, static_cast<cudaStream_t>(stream_));
      !s.ok())
    return s;
  return true;
}

}  // namespace mlperf::datasets::cuda
