#include "reference/detection/anchors.h"

#include <cmath>

#include "base/check.h"

namespace mlperf::detection {

std::vector<std::vector<int>> RetinaNetAnchorSizes() {
  std::vector<std::vector<int>> sizes;
  for (int s : {32, 64, 128, 256, 512})
    sizes.push_back({s, static_cast<int>(s * std::pow(2.0, 1.0 / 3)),
                     static_cast<int>(s * std::pow(2.0, 2.0 / 3))});
  return sizes;
}

std::vector<Box> CellAnchors(std::span<const int> sizes) {
  std::vector<Box> out;
  for (float ratio : kAspectRatios) {
    const float h_ratio = std::sqrt(ratio);
    const float w_ratio = 1.0f / h_ratio;
    for (int size : sizes) {
      const float w = w_ratio * static_cast<float>(size), h = h_ratio * static_cast<float>(size);
      // torch.round: half to even, as nearbyint in the default rounding mode.
      out.push_back({std::nearbyint(-w / 2), std::nearbyint(-h / 2), std::nearbyint(w / 2),
                     std::nearbyint(h / 2)});
    }
  }
  return out;
}

std::vector<Box> ImageAnchors(const std::vector<std::vector<int>>& sizes, int64_t image_h,
                              int64_t image_w, std::span<const FeatureSize> levels) {
  MLPERF_CHECK(sizes.size() == levels.size());
  std::vector<Box> out;
  for (size_t l = 0; l < levels.size(); ++l) {
    const std::vector<Box> cell = CellAnchors(sizes[l]);
    const int64_t stride_h = image_h / levels[l].height, stride_w = image_w / levels[l].width;
    for (int64_t y = 0; y < levels[l].height; ++y) {
      const float shift_y = static_cast<float>(y * stride_h);
      for (int64_t x = 0; x < levels[l].width; ++x) {
        const float shift_x = static_cast<float>(x * stride_w);
        for (const Box& a : cell)
          out.push_back({shift_x + a.x1, shift_y + a.y1, shift_x + a.x2, shift_y + a.y2});
      }
    }
  }
  return out;
}

}  // namespace mlperf::detection
