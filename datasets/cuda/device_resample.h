// The pipeline's bilinear resample (augment.h) on a CUDA device, for images
// already decoded there: the same taps and the same float operations in the
// same order as ResampleBilinear, rounded the same way (no fused
// multiply-adds), so that the device gives the CPU's pixels bit for bit.
#pragma once

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <span>

#include "datasets/augment.h"
#include "reference/core/tensor.h"

namespace mlperf::datasets::cuda {

// Interleaved 8-bit RGB on the device, rows of width * 3 bytes; (x0, y0) as
// in RgbImage.
struct DeviceRgb {
  const uint8_t* pixels = nullptr;
  int width = 0, height = 0;
  int x0 = 0, y0 = 0;
};

struct ResampleJob {
  DeviceRgb source;
  AxisMap x_axis, y_axis;
  bool flip = false;
};

// Resamples job i into out + i * 3 * out_size^2 (floats on the device, in
// `layout`), minus `mean`, queued on `stream`. `jobs` may change once this
// returns. The axes must stay inside their sources, as ResampleBilinear
// checks; a job that does not is refused before anything is queued.
class DeviceResampler {
 public:
  DeviceResampler() = default;
  ~DeviceResampler();
  DeviceResampler(const DeviceResampler&) = delete;
  DeviceResampler& operator=(const DeviceResampler&) = delete;

  void Run(std::span<const ResampleJob> jobs, int out_size, const std::array<float, 3>& mean,
           core::Layout layout, float* out, cudaStream_t stream);

 private:
  ResampleJob* device_jobs_ = nullptr;
  size_t capacity_ = 0;
};

}  // namespace mlperf::datasets::cuda
