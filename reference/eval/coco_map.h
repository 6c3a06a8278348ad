// COCO box mAP as pycocotools' COCOeval (iouType "bbox") computes it, the
// metric of the RetinaNet reference: IoU thresholds 0.50:0.05:0.95, 101
// recall points, at most 1, 10 and 100 detections per image and class,
// areas all / small (< 32^2) / medium / large (> 96^2), crowd boxes matched
// by intersection over the detection's area, every tie broken as its stable
// sorts break it. The twelve numbers of COCOeval.stats come out, -1 where it
// gives -1 (no ground truth in a range).
#pragma once

#include <array>
#include <span>

#include "absl/status/statusor.h"
#include "datasets/coco/annotations.h"

namespace mlperf::eval {

// COCOeval.stats, in its order.
struct CocoStats {
  std::array<double, 12> values{};
  double map() const { return values[0]; }  // AP@[.50:.95], all areas, 100 detections
  static const std::array<const char*, 12>& Names();
};

// The detections against the ground truth over every image of `truth`
// (sorted by id) and every category it lists. Detections of other
// categories are left out, as COCOeval leaves them; a detection of an image
// the ground truth does not have, or an annotation id used twice, is an
// error (COCOeval asserts or silently mixes them). Categories run in
// parallel (OpenMP); the value does not depend on the thread count.
absl::StatusOr<CocoStats> CocoBoxStats(const datasets::coco::Dataset& truth,
                                       std::span<const datasets::coco::Detection> detections);

}  // namespace mlperf::eval
