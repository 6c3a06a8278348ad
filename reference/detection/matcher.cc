#include "reference/detection/matcher.h"

#include <algorithm>
#include <limits>

#include "base/check.h"

namespace mlperf::detection {

std::vector<int64_t> MatchAnchors(const float* iou, int64_t truths, int64_t anchors, float high,
                                  float low) {
  MLPERF_CHECK(truths > 0);
  std::vector<int64_t> best(static_cast<size_t>(anchors), 0), matches(best.size());
  for (int64_t a = 0; a < anchors; ++a) {
    float value = iou[a];
    for (int64_t t = 1; t < truths; ++t)
      if (iou[t * anchors + a] > value) {
        value = iou[t * anchors + a];
        best[a] = t;
      }
    matches[a] = value < low ? kBackground : value < high ? kIgnored : best[a];
  }
  for (int64_t t = 0; t < truths; ++t) {
    const float* row = iou + t * anchors;
    const float top = *std::max_element(row, row + anchors);
    for (int64_t a = 0; a < anchors; ++a)
      if (row[a] == top) matches[a] = best[a];
  }
  return matches;
}

}  // namespace mlperf::detection
