#include "datasets/augment.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "reference/core/philox.h"

namespace mlperf::datasets {
namespace {

// Draw 0 of a sample's stream is the flip; attempt a of the crop uses block a + 1.
constexpr uint64_t kFlipDraw = 0;

struct Tap {
  int i0, i1;
  float w1;  // weight of i1; i0 gets 1 - w1
};

void MakeTaps(const AxisMap& axis, int n, int origin, std::vector<Tap>* taps) {
  taps->resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    double src = axis.shift + axis.scale * (i + 0.5) - 0.5;
    src = std::max(src, static_cast<double>(axis.lo));
    const int i0 = std::min(static_cast<int>(std::floor(src)), axis.hi);
    const int i1 = std::min(i0 + 1, axis.hi);
    (*taps)[static_cast<size_t>(i)] = {i0 - origin, i1 - origin, static_cast<float>(src - i0)};
  }
}

}  // namespace

CropWindow SampleDistortedCrop(int width, int height, uint64_t seed, uint64_t stream,
                               const DistortedCropOptions& options) {
  const double area = static_cast<double>(width) * height;
  for (int attempt = 0; attempt < options.max_attempts; ++attempt) {
    const core::Philox4x32 r = core::PhiloxBlock(seed, stream, static_cast<uint64_t>(attempt) + 1);
    const double aspect = options.min_aspect +
                          (options.max_aspect - options.min_aspect) * core::UniformFromBits(r.v[0]);
    const double fraction =
        options.min_area + (options.max_area - options.min_area) * core::UniformFromBits(r.v[1]);
    const int w = static_cast<int>(std::lround(std::sqrt(fraction * area * aspect)));
    const int h = static_cast<int>(std::lround(std::sqrt(fraction * area / aspect)));
    if (w < 1 || h < 1 || w > width || h > height) continue;
    if (static_cast<double>(w) * h < options.min_object_covered * area) continue;
    const int x =
        std::min(static_cast<int>(core::UniformFromBits(r.v[2]) * (width - w + 1)), width - w);
    const int y =
        std::min(static_cast<int>(core::UniformFromBits(r.v[3]) * (height - h + 1)), height - h);
    return {x, y, w, h};
  }
  return {0, 0, width, height};
}

bool SampleFlip(uint64_t seed, uint64_t stream) {
  return core::PhiloxBits(seed, stream, kFlipDraw) >> 31;
}

int AxisMap::First() const {
  return std::clamp(
      static_cast<int>(std::floor(std::max(shift + 0.5 * scale - 0.5, static_cast<double>(lo)))),
      lo, hi);
}

int AxisMap::Last(int n) const {
  const double src = std::max(shift + scale * (n - 0.5) - 0.5, static_cast<double>(lo));
  return std::min(static_cast<int>(std::floor(src)) + 1, hi);
}

AxisMap CropAxis(int crop_begin, int crop_size, int full, int scaled, int out) {
  const double f = static_cast<double>(scaled) / full;
  AxisMap axis;
  if (scaled == full) {
    axis.lo = crop_begin;
    axis.hi = crop_begin + crop_size - 1;
  } else {
    axis.lo = std::clamp(static_cast<int>(std::floor(crop_begin * f)), 0, scaled - 1);
    axis.hi = std::clamp(static_cast<int>(std::ceil((crop_begin + crop_size) * f)) - 1, axis.lo,
                         scaled - 1);
  }
  axis.shift = crop_begin * f;
  axis.scale = crop_size * f / out;
  return axis;
}

EvalGeometry EvalResize(int width, int height, int resize_shorter) {
  const double ratio = static_cast<double>(resize_shorter) / std::min(width, height);
  EvalGeometry g;
  g.resized_width = width <= height ? resize_shorter : static_cast<int>(width * ratio);
  g.resized_height = height < width ? resize_shorter : static_cast<int>(height * ratio);
  return g;
}

AxisMap CentreCropAxis(int resized, int scaled, int out) {
  AxisMap axis;
  axis.scale = static_cast<double>(scaled) / resized;
  axis.shift = ((resized - out) / 2) * axis.scale;
  axis.lo = 0;
  axis.hi = scaled - 1;
  return axis;
}

void ResampleBilinear(const RgbImage& src, const AxisMap& x_axis, const AxisMap& y_axis,
                      int out_width, int out_height, bool flip, const std::array<float, 3>& mean,
                      core::Layout layout, float* out) {
  MLPERF_CHECK(layout == core::Layout::kNCHW || layout == core::Layout::kNHWC);
  MLPERF_CHECK(x_axis.First() >= src.x0 && x_axis.Last(out_width) < src.x0 + src.width);
  MLPERF_CHECK(y_axis.First() >= src.y0 && y_axis.Last(out_height) < src.y0 + src.height);
  thread_local std::vector<Tap> xs, ys;
  MakeTaps(x_axis, out_width, src.x0, &xs);
  MakeTaps(y_axis, out_height, src.y0, &ys);
  const size_t plane = static_cast<size_t>(out_width) * out_height;
  const size_t stride = static_cast<size_t>(src.width) * 3;
  for (int oy = 0; oy < out_height; ++oy) {
    const Tap& ty = ys[static_cast<size_t>(oy)];
    const uint8_t* r0 = src.pixels.data() + ty.i0 * stride;
    const uint8_t* r1 = src.pixels.data() + ty.i1 * stride;
    for (int ox = 0; ox < out_width; ++ox) {
      // A mirrored output column reads the source column of its mirror image.
      const Tap& tx = xs[static_cast<size_t>(flip ? out_width - 1 - ox : ox)];
      const int a = tx.i0 * 3, b = tx.i1 * 3;
      const size_t o = static_cast<size_t>(oy) * out_width + ox;
      for (int c = 0; c < 3; ++c) {
        const float top = r0[a + c] + tx.w1 * (r0[b + c] - r0[a + c]);
        const float bottom = r1[a + c] + tx.w1 * (r1[b + c] - r1[a + c]);
        const float v = top + ty.w1 * (bottom - top) - mean[c];
        if (layout == core::Layout::kNCHW) {
          out[c * plane + o] = v;
        } else {
          out[o * 3 + c] = v;
        }
      }
    }
  }
}

}  // namespace mlperf::datasets
