// The MLPerf OpenImages subset as its download scripts leave it, one split
// per folder: <split>/data/<file_name> JPEGs and
// <split>/labels/openimages-mlperf.json (COCO format, category ids the
// classes 0..263). Images are taken in id order, as the reference's
// CocoDetection does. A sample is what the reference's model sees: the
// JPEG decoded, flipped horizontally if asked (boxes too), scaled to
// [0, 1], normalised by the ImageNet mean and deviation, then resized
// bilinearly (PyTorch's interpolate, align_corners=False) to size x size;
// its boxes as corners clamped to the image, degenerate ones dropped, and
// scaled to the resized frame in fp32 (the reference's resize_boxes).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/coco/annotations.h"

namespace mlperf::datasets::openimages {

inline constexpr char kLabelsName[] = "openimages-mlperf";

struct DetectionSample {
  std::vector<std::array<float, 4>> boxes;  // x1, y1, x2, y2 in the resized frame
  std::vector<int32_t> labels;              // the category ids
  int64_t image_id = 0;
  int64_t height = 0, width = 0;  // as decoded
};

class DetectionSet {
 public:
  // Reads the split's annotations; every image must have a file name.
  static absl::StatusOr<DetectionSet> Open(const std::filesystem::path& split_dir);

  int64_t size() const { return static_cast<int64_t>(order_.size()); }
  const coco::Dataset& annotations() const { return annotations_; }
  int64_t image_id(int64_t i) const { return annotations_.images[order_[i]].id; }
  // The most boxes any image has.
  int64_t max_boxes() const { return max_boxes_; }

  // Sample i into `pixels` (3 * size * size floats, channels-first) and `out`.
  absl::Status Load(int64_t i, bool hflip, int64_t size, float* pixels, DetectionSample* out) const;

 private:
  std::filesystem::path data_dir_;
  coco::Dataset annotations_;
  std::vector<size_t> order_;                        // images by id
  std::vector<std::vector<size_t>> boxes_of_image_;  // annotation indices, per order_ entry
  int64_t max_boxes_ = 0;
};

// PyTorch's bilinear resize (align_corners=False, no antialiasing) of
// channels-first planes.
void ResizeBilinear(const float* in, int64_t channels, int64_t in_h, int64_t in_w, float* out,
                    int64_t out_h, int64_t out_w);

}  // namespace mlperf::datasets::openimages
