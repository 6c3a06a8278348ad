#include "reference/detection/postprocess.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference/detection/nms.h"

namespace mlperf::detection {

Detections Postprocess(std::span<const LevelOutputs> levels, int64_t classes, int64_t image_h,
                       int64_t image_w, const PostprocessConfig& config, const NmsFn& nms) {
  const BoxCoder coder;
  Detections all;
  std::vector<int64_t> candidates;
  std::vector<float> scores;
  for (const LevelOutputs& level : levels) {
    const int64_t n = static_cast<int64_t>(level.anchors.size()) * classes;
    candidates.clear();
    scores.clear();
    for (int64_t i = 0; i < n; ++i) {
      const float score = 1.0f / (1.0f + std::exp(-level.logits[i]));
      if (score > config.score_threshold) {
        candidates.push_back(i);
        scores.push_back(score);
      }
    }
    std::vector<int64_t> order(candidates.size());
    std::iota(order.begin(), order.end(), 0);
    const auto top =
        std::min<int64_t>(config.candidates_per_level, static_cast<int64_t>(order.size()));
    std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](int64_t a, int64_t b) {
      return scores[a] > scores[b] || (scores[a] == scores[b] && a < b);
    });
    for (int64_t k = 0; k < top; ++k) {
      const int64_t flat = candidates[order[k]];
      const int64_t anchor = flat / classes;
      all.boxes.push_back(ClipToImage(
          coder.Decode(level.regression + anchor * 4, level.anchors[anchor]), image_h, image_w));
      all.scores.push_back(scores[order[k]]);
      all.labels.push_back(flat % classes);
    }
  }
  std::vector<int64_t> keep =
      BatchedNms(all.boxes, all.scores, all.labels, config.nms_threshold, nms);
  if (static_cast<int64_t>(keep.size()) > config.detections_per_image)
    keep.resize(config.detections_per_image);
  Detections out;
  for (int64_t i : keep) {
    out.boxes.push_back(all.boxes[i]);
    out.scores.push_back(all.scores[i]);
    out.labels.push_back(all.labels[i]);
  }
  return out;
}

}  // namespace mlperf::detection
