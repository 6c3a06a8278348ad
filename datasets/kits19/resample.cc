#include "datasets/kits19/resample.h"

#include <algorithm>
#include <cmath>

namespace mlperf::kits19 {
namespace {

// Per output index along one axis: the two source indices and their weights,
// in fp32 as PyTorch's CPU kernel computes them (scale (in-1)/(out-1)).
struct Linear {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};

Linear AlignedCorners(int64_t in, int64_t out) {
  Linear l;
  const float scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  for (int64_t o = 0; o < out; ++o) {
    const float src = scale * static_cast<float>(o);
    const auto i = static_cast<int64_t>(src);
    const float lambda = src - static_cast<float>(i);
    l.i0.push_back(i);
    l.i1.push_back(i < in - 1 ? i + 1 : i);
    l.w0.push_back(1.0f - lambda);
    l.w1.push_back(lambda);
  }
  return l;
}

std::vector<int64_t> NearestIndex(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<int64_t> index(static_cast<size_t>(out));
  for (int64_t o = 0; o < out; ++o)
    index[static_cast<size_t>(o)] =
        std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * scale)), in - 1);
  return index;
}

}  // namespace

std::vector<float> ResampleTrilinear(const float* in, const Shape3& s, const Shape3& o) {
  const Linear d = AlignedCorners(s[0], o[0]), h = AlignedCorners(s[1], o[1]),
               w = AlignedCorners(s[2], o[2]);
  std::vector<float> out(static_cast<size_t>(o[0] * o[1] * o[2]));
#pragma omp parallel for
  for (int64_t z = 0; z < o[0]; ++z) {
    for (int64_t y = 0; y < o[1]; ++y) {
      const float* p00 = in + (d.i0[z] * s[1] + h.i0[y]) * s[2];
      const float* p01 = in + (d.i0[z] * s[1] + h.i1[y]) * s[2];
      const float* p10 = in + (d.i1[z] * s[1] + h.i0[y]) * s[2];
      const float* p11 = in + (d.i1[z] * s[1] + h.i1[y]) * s[2];
      float* row = out.data() + (z * o[1] + y) * o[2];
      for (int64_t x = 0; x < o[2]; ++x) {
        const int64_t a = w.i0[x], b = w.i1[x];
        const float w0 = w.w0[x], w1 = w.w1[x];
        row[x] =
            d.w0[z] *
                (h.w0[y] * (w0 * p00[a] + w1 * p00[b]) + h.w1[y] * (w0 * p01[a] + w1 * p01[b])) +
            d.w1[z] *
                (h.w0[y] * (w0 * p10[a] + w1 * p10[b]) + h.w1[y] * (w0 * p11[a] + w1 * p11[b]));
      }
    }
  }
  return out;
}

std::vector<uint8_t> ResampleNearest(const uint8_t* in, const Shape3& s, const Shape3& o) {
  const std::vector<int64_t> d = NearestIndex(s[0], o[0]), h = NearestIndex(s[1], o[1]),
                             w = NearestIndex(s[2], o[2]);
  std::vector<uint8_t> out(static_cast<size_t>(o[0] * o[1] * o[2]));
#pragma omp parallel for
  for (int64_t z = 0; z < o[0]; ++z)
    for (int64_t y = 0; y < o[1]; ++y) {
      const uint8_t* src = in + (d[z] * s[1] + h[y]) * s[2];
      uint8_t* row = out.data() + (z * o[1] + y) * o[2];
      for (int64_t x = 0; x < o[2]; ++x) row[x] = src[w[x]];
    }
  return out;
}

}  // namespace mlperf::kits19
