// The RetinaNet reference's post-processing of one image's head outputs
// (postprocess_detections): per level the sigmoid scores above the
// threshold, the best 1,000 of them (ties in index order), their boxes
// decoded from the anchors and clipped to the image; then class-wise NMS
// over all levels and the best 300 kept.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/detection/boxes.h"
#include "reference/detection/nms.h"

namespace mlperf::detection {

struct PostprocessConfig {
  float score_threshold = 0.05f;
  int64_t candidates_per_level = 1000;
  double nms_threshold = 0.5;
  int64_t detections_per_image = 300;
};

// One pyramid level of one image: logits [anchors][classes], regression
// [anchors][4], the level's anchors.
struct LevelOutputs {
  const float* logits = nullptr;
  const float* regression = nullptr;
  std::span<const Box> anchors;
};

struct Detections {
  std::vector<Box> boxes;
  std::vector<float> scores;
  std::vector<int64_t> labels;  // 0-based class
};

// In the frame of the network's input (image_h x image_w); `nms` as
// BatchedNms takes it.
Detections Postprocess(std::span<const LevelOutputs> levels, int64_t classes, int64_t image_h,
                       int64_t image_w, const PostprocessConfig& config = {},
                       const NmsFn& nms = Nms);

}  // namespace mlperf::detection
