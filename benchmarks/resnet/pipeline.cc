#include "benchmarks/resnet/pipeline.h"

#include <utility>

#include "reference/kernels/dispatch.h"
#ifdef MLPERF_HAVE_NVJPEG
#include "datasets/cuda/device_batch_queue.h"
#endif

namespace mlperf::benchmarks::resnet {
namespace {

class ImagePipeline final : public DataPipeline {
 public:
  explicit ImagePipeline(std::unique_ptr<datasets::ImageLoader> loader)
      : loader_(std::move(loader)) {}
  int64_t size() const override { return loader_->size(); }
  void StartEval() override { loader_->StartEval(); }
  absl::StatusOr<bool> Next(models::Batch* batch) override {
    absl::StatusOr<bool> got = loader_->Next(&images_);
    if (!got.ok() || !*got) return got;
    const int64_t n = static_cast<int64_t>(images_.labels.size());
    batch->count = images_.count;
    batch->inputs = {
        core::Tensor(images_.pixels.data(), {n, static_cast<int64_t>(images_.pixels.size()) / n},
                     core::DType::kF32),
        core::Tensor(images_.labels.data(), {n}, core::DType::kI32)};
    return true;
  }

 private:
  std::unique_ptr<datasets::ImageLoader> loader_;
  datasets::ImageBatch images_;
};

#ifdef MLPERF_HAVE_NVJPEG
// The loader's threads read the files and draw the crops; a queue decodes
// and augments the images on the GPU a few batches ahead, and the model
// copies them from there.
class DeviceImagePipeline final : public DataPipeline {
 public:
  DeviceImagePipeline(std::unique_ptr<datasets::cuda::DeviceBatchQueue> queue, int image_size)
      : queue_(std::move(queue)), image_size_(image_size) {}
  int64_t size() const override { return queue_->size(); }
  void StartEval() override { queue_->StartEval(); }
  absl::StatusOr<bool> Next(models::Batch* batch) override {
    // The previous batch's copy into the model must be over before the queue
    // takes its buffer back.
    ops::Synchronize(core::Device::kCuda);
    absl::StatusOr<bool> got = queue_->Next(&images_);
    if (!got.ok() || !*got) return got;
    const int64_t n = static_cast<int64_t>(images_.labels.size());
    batch->count = images_.count;
    batch->inputs = {core::Tensor(const_cast<float*>(images_.pixels),
                                  {n, 3 * int64_t{image_size_} * image_size_}, core::DType::kF32,
                                  core::Device::kCuda),
                     core::Tensor(images_.labels.data(), {n}, core::DType::kI32)};
    return true;
  }

 private:
  std::unique_ptr<datasets::cuda::DeviceBatchQueue> queue_;
  const int image_size_;
  datasets::cuda::DeviceBatch images_;
};
#endif

}  // namespace

bool HaveDeviceDecoding() {
#ifdef MLPERF_HAVE_NVJPEG
  return true;
#else
  return false;
#endif
}

absl::StatusOr<std::unique_ptr<DataPipeline>> MakeImagePipeline(
    std::unique_ptr<datasets::ImageLoader> loader, const datasets::ImageLoaderOptions& o,
    bool device_decode) {
  if (!device_decode) return std::make_unique<ImagePipeline>(std::move(loader));
#ifdef MLPERF_HAVE_NVJPEG
  absl::StatusOr<std::unique_ptr<datasets::cuda::DeviceBatchQueue>> queue =
      datasets::cuda::DeviceBatchQueue::Create(
          std::move(loader), o.split,
          {.image_size = o.image_size, .layout = o.layout, .mean = o.mean});
  if (!queue.ok()) return queue.status();
  return std::make_unique<DeviceImagePipeline>(std::move(*queue), o.image_size);
#else
  (void)o;
  return absl::FailedPreconditionError("this build has no GPU data path");
#endif
}

}  // namespace mlperf::benchmarks::resnet
