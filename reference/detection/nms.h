// Non-maximum suppression as torchvision's CPU kernel computes it (the
// reference calls it): by decreasing score (ties in index order), a box
// suppresses the later ones it overlaps by more than the threshold, IoU in
// fp32. The indices kept come out by decreasing score.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "reference/detection/boxes.h"

namespace mlperf::detection {

std::vector<int64_t> Nms(std::span<const Box> boxes, std::span<const float> scores,
                         double iou_threshold);

// Indices by decreasing score, ties in index order: the order NMS visits.
std::vector<int64_t> ScoreOrder(std::span<const float> scores);

// Nms from a suppression matrix over the boxes in `order` (ops::NmsMask:
// ceil(n / 64) words a row), as a device computes it: the same indices.
std::vector<int64_t> WalkSuppression(std::span<const int64_t> order,
                                     std::span<const uint64_t> mask);

using NmsFn =
    std::function<std::vector<int64_t>(std::span<const Box>, std::span<const float>, double)>;

// NMS within each class, as the reference's batched_nms: over 4,000
// coordinates one NMS per class, the kept ones sorted by score; else one
// NMS over boxes shifted apart by class * (largest coordinate + 1) in fp32,
// where the shift's rounding is part of the result. `nms` runs each NMS
// (a device model passes one that builds the matrix on its device).
std::vector<int64_t> BatchedNms(std::span<const Box> boxes, std::span<const float> scores,
                                std::span<const int64_t> classes, double iou_threshold,
                                const NmsFn& nms = Nms);

}  // namespace mlperf::detection
