// The RetinaNet reference's anchors: per pyramid level three sizes
// (s, int(s * 2^(1/3)), int(s * 2^(2/3))) for s = 32 .. 512 and aspect
// ratios 0.5, 1, 2 (height over width), centred on the cell's corner,
// rounded to whole pixels; the level's stride is the image size divided by
// the feature map's, in integers (800 / 13 = 61 at P6). Order as the
// reference concatenates them: level, row, column, ratio, size.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/detection/boxes.h"

namespace mlperf::detection {

struct FeatureSize {
  int64_t height = 0, width = 0;
};

// The sizes of the reference's five levels (P3 to P7).
std::vector<std::vector<int>> RetinaNetAnchorSizes();
constexpr float kAspectRatios[3] = {0.5f, 1.0f, 2.0f};
constexpr int kAnchorsPerCell = 9;

// One cell's anchors around (0, 0), ratio-major, rounded half to even.
std::vector<Box> CellAnchors(std::span<const int> sizes);

// Every anchor of an image_h x image_w input whose levels have the given
// feature sizes, with sizes[level] as the level's anchor sizes.
std::vector<Box> ImageAnchors(const std::vector<std::vector<int>>& sizes, int64_t image_h,
                              int64_t image_w, std::span<const FeatureSize> levels);

}  // namespace mlperf::detection
