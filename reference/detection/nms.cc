#include "reference/detection/nms.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "base/check.h"

namespace mlperf::detection {

std::vector<int64_t> ScoreOrder(std::span<const float> scores) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
  return order;
}

std::vector<int64_t> WalkSuppression(std::span<const int64_t> order,
                                     std::span<const uint64_t> mask) {
  const size_t n = order.size(), words = (n + 63) / 64;
  MLPERF_CHECK(mask.size() == n * words);
  std::vector<uint64_t> removed(words, 0);
  std::vector<int64_t> keep;
  for (size_t r = 0; r < n; ++r) {
    if ((removed[r / 64] >> (r % 64)) & 1) continue;
    keep.push_back(order[r]);
    for (size_t w = r / 64; w < words; ++w) removed[w] |= mask[r * words + w];
  }
  return keep;
}

std::vector<int64_t> Nms(std::span<const Box> boxes, std::span<const float> scores,
                         double iou_threshold) {
  MLPERF_CHECK(boxes.size() == scores.size());
  const std::vector<int64_t> order = ScoreOrder(scores);
  std::vector<float> areas(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i)
    areas[i] = (boxes[i].x2 - boxes[i].x1) * (boxes[i].y2 - boxes[i].y1);
  std::vector<uint8_t> suppressed(boxes.size(), 0);
  std::vector<int64_t> keep;
  for (size_t oi = 0; oi < order.size(); ++oi) {
    const int64_t i = order[oi];
    if (suppressed[i]) continue;
    keep.push_back(i);
    const Box& p = boxes[i];
    for (size_t oj = oi + 1; oj < order.size(); ++oj) {
      const int64_t j = order[oj];
      if (suppressed[j]) continue;
      const Box& q = boxes[j];
      const float w = std::max(0.0f, std::min(p.x2, q.x2) - std::max(p.x1, q.x1));
      const float h = std::max(0.0f, std::min(p.y2, q.y2) - std::max(p.y1, q.y1));
      const float inter = w * h;
      const float overlap = inter / (areas[i] + areas[j] - inter);
      if (static_cast<double>(overlap) > iou_threshold) suppressed[j] = 1;
    }
  }
  return keep;
}

std::vector<int64_t> BatchedNms(std::span<const Box> boxes, std::span<const float> scores,
                                std::span<const int64_t> classes, double iou_threshold,
                                const NmsFn& nms) {
  MLPERF_CHECK(boxes.size() == scores.size() && boxes.size() == classes.size());
  if (boxes.empty()) return {};
  if (boxes.size() * 4 > 4000) {
    std::map<int64_t, std::vector<int64_t>> members;  // by class, in index order
    for (size_t i = 0; i < boxes.size(); ++i)
      members[classes[i]].push_back(static_cast<int64_t>(i));
    std::vector<uint8_t> kept(boxes.size(), 0);
    std::vector<Box> sub_boxes;
    std::vector<float> sub_scores;
    for (const auto& [cls, idx] : members) {
      sub_boxes.clear();
      sub_scores.clear();
      for (int64_t i : idx) {
        sub_boxes.push_back(boxes[i]);
        sub_scores.push_back(scores[i]);
      }
      for (int64_t k : nms(sub_boxes, sub_scores, iou_threshold)) kept[idx[k]] = 1;
    }
    std::vector<int64_t> keep;
    for (size_t i = 0; i < boxes.size(); ++i)
      if (kept[i]) keep.push_back(static_cast<int64_t>(i));
    std::stable_sort(keep.begin(), keep.end(),
                     [&](int64_t a, int64_t b) { return scores[a] > scores[b]; });
    return keep;
  }
  float top = boxes[0].x1;
  for (const Box& b : boxes) top = std::max({top, b.x1, b.y1, b.x2, b.y2});
  std::vector<Box> shifted(boxes.size());
  for (size_t i = 0; i < boxes.size(); ++i) {
    const float offset = static_cast<float>(classes[i]) * (top + 1.0f);
    shifted[i] = {boxes[i].x1 + offset, boxes[i].y1 + offset, boxes[i].x2 + offset,
                  boxes[i].y2 + offset};
  }
  return nms(shifted, scores, iou_threshold);
}

}  // namespace mlperf::detection
