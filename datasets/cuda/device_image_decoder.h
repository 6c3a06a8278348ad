// The GPU data path of the ResNet-50 pipeline: the loader's threads read the
// files and draw each image's crop and flip (ImageOutput::kEncoded), and this
// decoder turns such a batch into pixels on the device. nvJPEG decodes the
// JPEGs there (the H100's hardware JPEG engines when present, else its
// CUDA decoder) and DeviceResampler crops, flips, resizes and subtracts the
// mean exactly as the CPU pipeline does. What nvJPEG cannot decode (a PNG
// under a JPEG name, greyscale, CMYK, or a file it rejects) is decoded by
// libjpeg-turbo on the host and uploaded, so a batch never fails for want of
// a decoder, and a broken file fails with libjpeg's message and its name.
//
// The pixels differ from the CPU pipeline's only by the two decoders' IDCT
// and chroma upsampling; the host route gives the CPU's pixels bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/image_loader.h"
#include "reference/core/tensor.h"

namespace mlperf::datasets::cuda {

enum class JpegBackend {
  kAuto,      // the hardware decoder when the GPU has one, else kCuda
  kHardware,  // nvJPEG's hardware backend (A100, H100); refused where there is none
  kCuda,      // nvJPEG's default backend: Huffman on the host, the rest in CUDA
};

struct DeviceDecoderOptions {
  int image_size = 224;  // as ImageLoaderOptions
  core::Layout layout = core::Layout::kNHWC;
  std::array<float, 3> mean = {123.68f, 116.78f, 103.94f};
  JpegBackend backend = JpegBackend::kAuto;
};

class DeviceImageDecoder {
 public:
  // Fails (with the reason) without a CUDA device or nvJPEG, or when the
  // backend asked for is not there.
  static absl::StatusOr<std::unique_ptr<DeviceImageDecoder>> Create(
      const DeviceDecoderOptions& options);
  ~DeviceImageDecoder();
  DeviceImageDecoder(const DeviceImageDecoder&) = delete;
  DeviceImageDecoder& operator=(const DeviceImageDecoder&) = delete;

  // Decodes the batch's `count` images into `out` on the device (batch
  // size x 3 x image_size^2 floats in the options' layout; the padding past
  // count is zero), on `stream`, and returns when they are there.
  absl::Status Decode(const ImageBatch& batch, float* out, cudaStream_t stream);

  // "hardware" or "cuda".
  const char* backend_name() const;
  int image_size() const;
  // Images decoded by nvJPEG and by the host route so far.
  int64_t device_decoded() const;
  int64_t host_decoded() const;

  class Impl;

 private:
  explicit DeviceImageDecoder(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace mlperf::datasets::cuda
