#include "reference/detection/boxes.h"

#include <algorithm>

namespace mlperf::detection {

void BoxIou(std::span<const Box> a, std::span<const Box> b, float* iou) {
  for (size_t i = 0; i < a.size(); ++i) {
    const Box& p = a[i];
    const float area_p = (p.x2 - p.x1) * (p.y2 - p.y1);
    for (size_t j = 0; j < b.size(); ++j) {
      const Box& q = b[j];
      const float area_q = (q.x2 - q.x1) * (q.y2 - q.y1);
      const float w = std::max(std::min(p.x2, q.x2) - std::max(p.x1, q.x1), 0.0f);
      const float h = std::max(std::min(p.y2, q.y2) - std::max(p.y1, q.y1), 0.0f);
      const float inter = w * h;
      iou[i * b.size() + j] = inter / (area_p + area_q - inter);
    }
  }
}

std::array<float, 4> BoxCoder::Encode(const Box& truth, const Box& anchor) const {
  const float anchor_w = anchor.x2 - anchor.x1, anchor_h = anchor.y2 - anchor.y1;
  const float anchor_x = anchor.x1 + 0.5f * anchor_w, anchor_y = anchor.y1 + 0.5f * anchor_h;
  const float truth_w = truth.x2 - truth.x1, truth_h = truth.y2 - truth.y1;
  const float truth_x = truth.x1 + 0.5f * truth_w, truth_y = truth.y1 + 0.5f * truth_h;
  return {(truth_x - anchor_x) / anchor_w, (truth_y - anchor_y) / anchor_h,
          std::log(truth_w / anchor_w), std::log(truth_h / anchor_h)};
}

Box BoxCoder::Decode(const float code[4], const Box& anchor) const {
  const float w = anchor.x2 - anchor.x1, h = anchor.y2 - anchor.y1;
  const float cx = anchor.x1 + 0.5f * w, cy = anchor.y1 + 0.5f * h;
  // torch.clamp(max=) keeps a NaN.
  const float dw = std::isnan(code[2]) ? code[2] : std::min(code[2], log_clip_);
  const float dh = std::isnan(code[3]) ? code[3] : std::min(code[3], log_clip_);
  const float pred_x = code[0] * w + cx, pred_y = code[1] * h + cy;
  const float half_w = 0.5f * (std::exp(dw) * w), half_h = 0.5f * (std::exp(dh) * h);
  return {pred_x - half_w, pred_y - half_h, pred_x + half_w, pred_y + half_h};
}

Box ClipToImage(const Box& box, int64_t height, int64_t width) {
  const float w = static_cast<float>(width), h = static_cast<float>(height);
  auto clamp = [](float v, float hi) {
    return std::isnan(v) ? v : std::min(std::max(v, 0.0f), hi);
  };
  return {clamp(box.x1, w), clamp(box.y1, h), clamp(box.x2, w), clamp(box.y2, h)};
}

Box ScaleBox(const Box& box, int64_t from_h, int64_t from_w, int64_t to_h, int64_t to_w) {
  const float ratio_h = static_cast<float>(to_h) / static_cast<float>(from_h);
  const float ratio_w = static_cast<float>(to_w) / static_cast<float>(from_w);
  return {box.x1 * ratio_w, box.y1 * ratio_h, box.x2 * ratio_w, box.y2 * ratio_h};
}

}  // namespace mlperf::detection
