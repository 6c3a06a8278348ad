// RetinaNet's training loss for one image as the reference computes it
// (RetinaNetHead.compute_loss): anchors matched to the image's boxes
// (matcher.h); the sigmoid focal loss (alpha 0.25, gamma 2) summed over
// every class of every anchor but the ignored ones, and the L1 loss of the
// foreground anchors' regression against their encoded boxes, each divided
// by max(1, foreground anchors). The reference then averages the images.
// Head outputs are read where a convolution leaves them: per level
// [anchors per cell * classes (or 4), height, width] of one image.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/detection/boxes.h"

namespace mlperf::detection {

struct ImageTargets {
  std::vector<Box> boxes;       // in the network input's frame
  std::vector<int64_t> labels;  // 0-based classes
};

struct LevelHead {
  const float* logits = nullptr;      // [A * classes, H, W]
  const float* regression = nullptr;  // [A * 4, H, W]
  float* dlogits = nullptr;           // same layouts; written
  float* dregression = nullptr;
  int64_t height = 0, width = 0;
};

struct ImageLoss {
  double classification = 0;  // already divided by max(1, foreground)
  double regression = 0;
  int64_t foreground = 0;
};

constexpr float kFocalAlpha = 0.25f;
constexpr float kFocalGamma = 2.0f;

// `anchors`: the image's anchors in level, row, column, anchor order (as
// ImageAnchors makes them). The gradients of (classification + regression)
// * grad_scale are written to every level's dlogits and dregression.
ImageLoss RetinaNetImageLoss(std::span<const LevelHead> levels, std::span<const Box> anchors,
                             int64_t classes, const ImageTargets& targets, float grad_scale);

}  // namespace mlperf::detection
