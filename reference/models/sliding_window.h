// 3D U-Net evaluation as the reference's runtime/inference.py does it: the
// volume's edges are cropped where an axis exceeds a multiple of the stride
// by less than half a stride, the rest is padded (constant -2.2 on the
// normalised image) to a multiple of the stride and at least one ROI, ROI
// windows overlapping by `overlap` are run through the model, their logits
// weighted by a Gaussian importance map (cube root of a 3D Gaussian with
// sigma = ROI / 8, maximum 1) and summed, divided by the summed weights, and
// the argmax is scored with the Dice of every foreground class.
//
// The reference crops its result with the uncropped size, which Python's
// slicing clamps; for every volume of at least one ROI per axis (all
// preprocessed KiTS19 cases) that is the cropped region, which is what we
// return.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "reference/core/tensor.h"

namespace mlperf::models {

struct SlidingWindowOptions {
  int64_t roi = 128;
  double overlap = 0.5;
  float padding_value = -2.2f;
};

// scipy.signal.gaussian(roi, 0.125 * roi) in 3D, cube root, maximum 1: roi^3
// weights (computed in double, rounded to fp32 as the reference's cast).
std::vector<float> GaussianImportance(int64_t roi);

// Runs `count` windows of roi^3 voxels (channels-first, one input channel)
// and writes their logits [count, classes, roi^3].
using WindowFn = std::function<void(const float* windows, int64_t count, float* logits)>;

struct VolumeLogits {
  std::array<int64_t, 3> begin{};  // where the cropped region starts in the input
  std::array<int64_t, 3> shape{};  // its size
  int64_t classes = 0;
  std::vector<float> logits;  // [classes, shape...], weighted average of the windows
};

// image: one channel, `shape` = D, H, W, C order. Up to `batch` windows per call of fn.
VolumeLogits SlidingWindowLogits(const SlidingWindowOptions& options, const float* image,
                                 const std::array<int64_t, 3>& shape, int64_t classes,
                                 int64_t batch, const WindowFn& fn);

// Dice of the argmax prediction for classes 1..classes-1, with the
// reference's smoothing 1e-6 on both sides: labels over the whole input
// volume (uint8 or int32, [D, H, W] or [1, D, H, W]), scored on the cropped region.
std::vector<double> CaseDice(const VolumeLogits& logits, const core::Tensor& labels);

}  // namespace mlperf::models
