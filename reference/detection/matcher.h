// Anchor-to-truth matching as the RetinaNet reference's Matcher(0.5, 0.4,
// allow_low_quality_matches=True): each anchor takes the truth it overlaps
// most (the first on ties); below 0.4 it is background (-1), from 0.4 to
// 0.5 ignored (-2); then every anchor that is some truth's best (ties
// included, also when that best is 0) takes its own best truth back.
#pragma once

#include <cstdint>
#include <vector>

namespace mlperf::detection {

constexpr int64_t kBackground = -1;
constexpr int64_t kIgnored = -2;

// iou: [truths][anchors] (BoxIou of the truths against the anchors); at
// least one truth.
std::vector<int64_t> MatchAnchors(const float* iou, int64_t truths, int64_t anchors,
                                  float high = 0.5f, float low = 0.4f);

}  // namespace mlperf::detection
