#include "reference/detection/losses.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "reference/detection/anchors.h"
#include "reference/detection/matcher.h"

namespace mlperf::detection {
namespace {

// torchvision's sigmoid_focal_loss of one logit against a 0/1 target, and
// its derivative.
struct Focal {
  float loss, grad;
};

Focal FocalLoss(float x, float t) {
  const float p = 1.0f / (1.0f + std::exp(-x));
  // binary_cross_entropy_with_logits, the stable form.
  const float ce = std::max(x, 0.0f) - x * t + std::log1p(std::exp(-std::fabs(x)));
  const float p_t = p * t + (1 - p) * (1 - t);
  const float alpha_t = kFocalAlpha * t + (1 - kFocalAlpha) * (1 - t);
  const float m = 1 - p_t;  // the modulating factor's base; gamma = 2
  const float loss = alpha_t * ce * m * m;
  // d/dx: ce' = p - t, (1 - p_t)' = -(2t - 1) p (1 - p).
  const float grad = alpha_t * m * ((p - t) * m - 2 * ce * (2 * t - 1) * p * (1 - p));
  return {loss, grad};
}

}  // namespace

ImageLoss RetinaNetImageLoss(std::span<const LevelHead> levels, std::span<const Box> anchors,
                             int64_t classes, const ImageTargets& targets, float grad_scale) {
  MLPERF_CHECK(targets.boxes.size() == targets.labels.size());
  const auto n_anchors = static_cast<int64_t>(anchors.size());
  std::vector<int64_t> matches(anchors.size(), kBackground);
  if (!targets.boxes.empty()) {
    std::vector<float> iou(targets.boxes.size() * anchors.size());
    BoxIou(targets.boxes, anchors, iou.data());
    matches = MatchAnchors(iou.data(), static_cast<int64_t>(targets.boxes.size()), n_anchors);
  }
  ImageLoss out;
  for (int64_t m : matches) out.foreground += m >= 0;
  const double norm = static_cast<double>(std::max<int64_t>(1, out.foreground));
  const float scale = grad_scale / static_cast<float>(norm);
  const BoxCoder coder;
  double cls_sum = 0, reg_sum = 0;
  int64_t first = 0;  // the level's first anchor
  for (const LevelHead& level : levels) {
    const int64_t plane = level.height * level.width;
    for (int64_t a = 0; a < kAnchorsPerCell; ++a)
      for (int64_t pos = 0; pos < plane; ++pos) {
        const int64_t anchor = first + pos * kAnchorsPerCell + a;
        MLPERF_CHECK(anchor < n_anchors);
        const int64_t match = matches[anchor];
        const int64_t label = match >= 0 ? targets.labels[match] : -1;
        for (int64_t k = 0; k < classes; ++k) {
          const int64_t at = (a * classes + k) * plane + pos;
          if (match == kIgnored) {
            level.dlogits[at] = 0;
            continue;
          }
          const Focal f = FocalLoss(level.logits[at], k == label ? 1.0f : 0.0f);
          cls_sum += f.loss;
          level.dlogits[at] = f.grad * scale;
        }
        std::array<float, 4> target{};
        if (match >= 0) target = coder.Encode(targets.boxes[match], anchors[anchor]);
        for (int64_t c = 0; c < 4; ++c) {
          const int64_t at = (a * 4 + c) * plane + pos;
          if (match < 0) {
            level.dregression[at] = 0;
            continue;
          }
          const float diff = level.regression[at] - target[c];
          reg_sum += std::fabs(diff);
          level.dregression[at] = (diff > 0 ? 1.0f : diff < 0 ? -1.0f : 0.0f) * scale;
        }
      }
    first += plane * kAnchorsPerCell;
  }
  MLPERF_CHECK(first == n_anchors);
  out.classification = cls_sum / norm;
  out.regression = reg_sum / norm;
  return out;
}

}  // namespace mlperf::detection
