// Non-maximum suppression as torchvision's CPU kernel computes it (the
// reference calls it): by decreasing score (ties in index order), a box
// suppresses the later ones it overlaps by more than the threshold, IoU in
// fp32. The indices kept come out by decreasing score.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/detection/boxes.h"

namespace mlperf::detection {

std::vector<int64_t> Nms(std::span<const Box> boxes, std::span<const float> scores,
                         double iou_threshold);

// NMS within each class, as the reference's batched_nms: over 4,000
// coordinates one NMS per class, the kept ones sorted by score; else one
// NMS over boxes shifted apart by class * (largest coordinate + 1) in fp32,
// where the shift's rounding is part of the result.
std::vector<int64_t> BatchedNms(std::span<const Box> boxes, std::span<const float> scores,
                                std::span<const int64_t> classes, double iou_threshold);

}  // namespace mlperf::detection
