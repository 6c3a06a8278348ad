// Image geometry of the ResNet-50 reference pipeline (references.md 2.3):
// training = distorted bounding-box crop + random flip + bilinear resize to a
// square without keeping aspect; evaluation = aspect-preserving resize of the
// shorter side + centre crop. Both subtract the per-channel mean and write
// float pixels in NCHW or NHWC.
//
// Randomness comes from Philox (reference/core/philox.h) with key = seed and
// counter offset = a per-sample stream, so the same (seed, stream) always
// gives the same crop and flip, on any thread.
#pragma once

#include <array>
#include <cstdint>

#include "datasets/jpeg.h"
#include "reference/core/tensor.h"

namespace mlperf::datasets {

struct CropWindow {
  int x = 0, y = 0, width = 0, height = 0;
};

// tf.image.sample_distorted_bounding_box with the whole image as the only box.
struct DistortedCropOptions {
  float min_object_covered = 0.1f;  // crop area >= this fraction of the box (the whole image)
  float min_aspect = 0.75f, max_aspect = 1.33f;  // width / height
  float min_area = 0.05f, max_area = 1.0f;       // fraction of the image area
  int max_attempts = 100;
};

// Rejection-samples a window (aspect uniform, area uniform, then a uniform
// position); after max_attempts failures the whole image, as TF does.
CropWindow SampleDistortedCrop(int width, int height, uint64_t seed, uint64_t stream,
                               const DistortedCropOptions& options = {});
// Horizontal flip with probability 1/2, from the same stream as the crop.
bool SampleFlip(uint64_t seed, uint64_t stream);

// One output axis of a bilinear resample with align_corners=False (half-pixel
// centres), in source-pixel coordinates of the decoded image:
//   src(i) = shift + scale * (i + 0.5) - 0.5, clamped below at lo;
//   taps floor(src) and min(floor(src) + 1, hi).
// This is exactly PyTorch's F.interpolate(bilinear, align_corners=False) of
// the window [lo, hi] when shift = lo and scale = window / output.
struct AxisMap {
  double shift = 0, scale = 1;
  int lo = 0, hi = 0;
  // The source pixels [first, last] that outputs 0..n-1 read.
  int First() const;
  int Last(int n) const;
};

// Training: the crop window (full-resolution coordinates of a width x height
// image) seen in a decode scaled to scaled_width x scaled_height.
AxisMap CropAxis(int crop_begin, int crop_size, int full, int scaled, int out);

// Evaluation: the side lengths after resizing the shorter side to
// resize_shorter (TF truncates the longer side), and the centre-crop axis.
struct EvalGeometry {
  int resized_width = 0, resized_height = 0;
};
EvalGeometry EvalResize(int width, int height, int resize_shorter);
AxisMap CentreCropAxis(int resized, int scaled, int out);

// Resamples `src` (whose pixel (0,0) is at (src.x0, src.y0) of the decoded
// image) into an out_width x out_height float image at `out`, optionally
// mirrored, minus `mean`, in `layout` (kNCHW: 3 planes; kNHWC: interleaved).
void ResampleBilinear(const RgbImage& src, const AxisMap& x_axis, const AxisMap& y_axis,
                      int out_width, int out_height, bool flip, const std::array<float, 3>& mean,
                      core::Layout layout, float* out);

}  // namespace mlperf::datasets
