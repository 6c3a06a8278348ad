// ImageNet batches for ResNet: the image loader's (datasets/image_loader),
// or, with --gpu_decode, images decoded and augmented on the GPU a few
// batches ahead (datasets/cuda).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "benchmarks/benchmark.h"
#include "datasets/image_loader.h"

namespace mlperf::benchmarks::resnet {

// The loader's batches as the model's inputs (images, labels); with
// `device_decode` the queue on the GPU in between. A build without nvJPEG
// has no device queue: FailedPrecondition.
absl::StatusOr<std::unique_ptr<DataPipeline>> MakeImagePipeline(
    std::unique_ptr<datasets::ImageLoader> loader, const datasets::ImageLoaderOptions& options,
    bool device_decode);

// Whether this build can decode on the GPU.
bool HaveDeviceDecoding();

}  // namespace mlperf::benchmarks::resnet
