#include "datasets/kits19/resample.h"

#include <algorithm>
#include <cmath>

namespace mlperf::kits19 {
namespace {

// Per output index along one axis: the two source indices and their weights.
// As PyTorch's CPU kernel: an fp32 scale (in-1)/(out-1), the source position
// scale * dst in fp64, the weights rounded to fp32.
struct Linear {
  std::vector<int64_t> i0, i1;
  std::vector<float> w0, w1;
};

Linear AlignedCorners(int64_t in, int64_t out) {
  Linear l;
  const float scale = out > 1 ? static_cast<float>(in - 1) / static_cast<float>(out - 1) : 0.0f;
  for (int64_t o = 0; o < out; ++o) {
    // Exact in fp64 (a 24-bit scale times a small integer).
    const double src = static_cast<double>(scale) * static_cast<double>(o);
    const auto i = std::min(static_cast<int64_t>(src), in - 1);
    const auto lambda = static_cast<float>(std::clamp(src - static_cast<double>(i), 0.0, 1.0));
    l.i0.push_back(i);
    l.i1.push_back(i < in - 1 ? i + 1 : i);
    l.w0.push_back(static_cast<float>(1.0 - static_cast<double>(lambda)));
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

// Bit for bit what torch 1.13's CPU kernel gives for the reference's input,
// a Fortran-ordered array from nibabel (checked on random volumes and on a
// 100x512x512 case): nested per axis, d outermost, each level
// fma(t0, w0, t1 * w1) in fp32. (A C-ordered tensor takes another kernel
// there, which differs by an ulp or so.) The "fma" clone runs the hardware
// instruction where the CPU has it; both round once, so both agree.
__attribute__((target_clones("fma", "default"))) std::vector<float> ResampleTrilinear(
    const float* in, const Shape3& s, const Shape3& o) {
  const Linear d = AlignedCorners(s[0], o[0]), h = AlignedCorners(s[1], o[1]),
               w = AlignedCorners(s[2], o[2]);
  std::vector<float> out(static_cast<size_t>(o[0] * o[1] * o[2]));
  for (int64_t z = 0; z < o[0]; ++z) {
    for (int64_t y = 0; y < o[1]; ++y) {
      const float* rows[2][2] = {
          {in + (d.i0[z] * s[1] + h.i0[y]) * s[2], in + (d.i0[z] * s[1] + h.i1[y]) * s[2]},
          {in + (d.i1[z] * s[1] + h.i0[y]) * s[2], in + (d.i1[z] * s[1] + h.i1[y]) * s[2]}};
      float* row = out.data() + (z * o[1] + y) * o[2];
      for (int64_t x = 0; x < o[2]; ++x) {
        const int64_t a = w.i0[x], b = w.i1[x];
        float across_h[2];
        for (int k = 0; k < 2; ++k) {
          const float t0 = std::fma(rows[k][0][a], w.w0[x], rows[k][0][b] * w.w1[x]);
          const float t1 = std::fma(rows[k][1][a], w.w0[x], rows[k][1][b] * w.w1[x]);
          across_h[k] = std::fma(t0, h.w0[y], t1 * h.w1[y]);
        }
        row[x] = std::fma(across_h[0], d.w0[z], across_h[1] * d.w1[z]);
      }
    }
  }
  return out;
}

std::vector<uint8_t> ResampleNearest(const uint8_t* in, const Shape3& s, const Shape3& o) {
  const std::vector<int64_t> d = NearestIndex(s[0], o[0]), h = NearestIndex(s[1], o[1]),
                             w = NearestIndex(s[2], o[2]);
  std::vector<uint8_t> out(static_cast<size_t>(o[0] * o[1] * o[2]));
  for (int64_t z = 0; z < o[0]; ++z)
    for (int64_t y = 0; y < o[1]; ++y) {
      const uint8_t* src = in + (d[z] * s[1] + h[y]) * s[2];
      uint8_t* row = out.data() + (z * o[1] + y) * o[2];
      for (int64_t x = 0; x < o[2]; ++x) row[x] = src[w[x]];
    }
  return out;
}

}  // namespace mlperf::kits19
