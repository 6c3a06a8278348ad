// Boxes of a detector, as the RetinaNet reference computes them in fp32
// (its copy of torchvision's box ops): corners (x1, y1, x2, y2), the IoU
// matrix, the box coder between boxes and regression targets, clipping and
// rescaling. Every operation rounds where the reference's float tensors do.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <span>

namespace mlperf::detection {

struct Box {
  float x1 = 0, y1 = 0, x2 = 0, y2 = 0;
};

// iou[i * b.size() + j] = IoU(a[i], b[j]) (box_iou): 0 where there is no
// intersection, NaN for two empty boxes, as the reference divides.
void BoxIou(std::span<const Box> a, std::span<const Box> b, float* iou);

// The reference's BoxCoder with weights (1, 1, 1, 1): a box as offsets of
// its centre in units of the anchor's size and the log of its size ratio;
// decoding clamps those logs at log(1000 / 16).
class BoxCoder {
 public:
  std::array<float, 4> Encode(const Box& truth, const Box& anchor) const;
  Box Decode(const float code[4], const Box& anchor) const;

 private:
  const float log_clip_ = static_cast<float>(std::log(1000.0 / 16));
};

// Corners clamped into [0, width] x [0, height].
Box ClipToImage(const Box& box, int64_t height, int64_t width);

// A box of an image resized from `from_h x from_w` to `to_h x to_w`, scaled
// back: each coordinate times (to / from), the ratio in fp32.
Box ScaleBox(const Box& box, int64_t from_h, int64_t from_w, int64_t to_h, int64_t to_w);

}  // namespace mlperf::detection
