#include "reference/kernels/cpu/pool.h"

#include <cstring>
#include <limits>

#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {
namespace {

using core::Tensor;

// Calls visit(out_index, in_index_or_-1) for every window position of every
// output of plane (n, c); the planes are independent, so they run in parallel.
template <typename Visit>
void ForEachWindow(const ConvGeometry& g, int64_t plane, Visit visit) {
  const int64_t od = g.out(0), oh = g.out(1), ow = g.out(2);
  for (int64_t z = 0; z < od; ++z)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t o = plane * g.out_spatial() + (z * oh + y) * ow + x;
        for (int64_t kd = 0; kd < g.kernel[0]; ++kd)
          for (int64_t kh = 0; kh < g.kernel[1]; ++kh)
            for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
              const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd;
              const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh;
              const int64_t ix = x * g.stride[2] - g.pad_begin[2] + kw;
              const bool inside =
                  iz >= 0 && iz < g.in[0] && iy >= 0 && iy < g.in[1] && ix >= 0 && ix < g.in[2];
              visit(o, inside ? plane * g.in_spatial() + (iz * g.in[1] + iy) * g.in[2] + ix
                              : int64_t{-1});
            }
      }
}

int64_t ValidCount(const ConvGeometry& g, int64_t o) {
  int64_t count = 1;
  const int64_t pos[3] = {o / (g.out(1) * g.out(2)), (o / g.out(2)) % g.out(1), o % g.out(2)};
  for (int i = 0; i < 3; ++i) {
    const int64_t begin = pos[i] * g.stride[i] - g.pad_begin[i];
    int64_t lo = begin < 0 ? 0 : begin;
    int64_t hi = begin + g.kernel[i] > g.in[i] ? g.in[i] : begin + g.kernel[i];
    count *= hi - lo;
  }
  return count;
}

}  // namespace

void MaxPoolForward(const ConvGeometry& g, const Tensor& x, const Tensor& y) {
  const int64_t planes = g.batch * g.in_channels;
  MLPERF_CHECK(x.numel() == planes * g.in_spatial() && y.numel() == planes * g.out_spatial());
  float* out = y.f32();
  const float* in = x.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t o = 0; o < g.out_spatial(); ++o)
      out[p * g.out_spatial() + o] = -std::numeric_limits<float>::infinity();
    ForEachWindow(g, p, [&](int64_t o, int64_t i) {
      if (i >= 0 && in[i] > out[o]) out[o] = in[i];
    });
  }
}

void MaxPoolBackward(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  const int64_t planes = g.batch * g.in_channels;
  MLPERF_CHECK(dx.numel() == planes * g.in_spatial() && dy.numel() == planes * g.out_spatial());
  std::memset(dx.data(), 0, dx.bytes());
  const float* in = x.f32();
#pragma omp parallel for if (WorthParallel(dx.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    int64_t best = -1, current = -1;
    auto flush = [&](int64_t o) {
      if (best >= 0) dx.f32()[best] += dy.f32()[o];
    };
    ForEachWindow(g, p, [&](int64_t o, int64_t i) {
      if (o != current) {
        if (current >= 0) flush(current);
        current = o;
        best = -1;
      }
      if (i >= 0 && (best < 0 || in[i] > in[best])) best = i;
    });
    if (current >= 0) flush(current);
  }
}

void AvgPoolForward(const ConvGeometry& g, bool count_include_pad, const Tensor& x,
                    const Tensor& y) {
  const int64_t planes = g.batch * g.in_channels;
  MLPERF_CHECK(x.numel() == planes * g.in_spatial() && y.numel() == planes * g.out_spatial());
  std::memset(y.data(), 0, y.bytes());
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    ForEachWindow(g, p, [&](int64_t o, int64_t i) {
      if (i >= 0) y.f32()[o] += x.f32()[i];
    });
    for (int64_t o = 0; o < g.out_spatial(); ++o) {
      const int64_t count = count_include_pad ? g.kernel_volume() : ValidCount(g, o);
      y.f32()[p * g.out_spatial() + o] /= static_cast<float>(count);
    }
  }
}

void AvgPoolBackward(const ConvGeometry& g, bool count_include_pad, const Tensor& dy,
                     const Tensor& dx) {
  const int64_t planes = g.batch * g.in_channels;
  MLPERF_CHECK(dx.numel() == planes * g.in_spatial() && dy.numel() == planes * g.out_spatial());
  std::memset(dx.data(), 0, dx.bytes());
#pragma omp parallel for if (WorthParallel(dx.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    ForEachWindow(g, p, [&](int64_t o, int64_t i) {
      if (i < 0) return;
      const int64_t count =
          count_include_pad ? g.kernel_volume() : ValidCount(g, o % g.out_spatial());
      dx.f32()[i] += dy.f32()[o] / static_cast<float>(count);
    });
  }
}

void GlobalAvgPoolForward(const Tensor& x, const Tensor& y) {
  const int64_t planes = y.numel(), s = x.numel() / planes;
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0.0;
    for (int64_t q = 0; q < s; ++q) sum += x.f32()[p * s + q];
    y.f32()[p] = static_cast<float>(sum / s);
  }
}

void GlobalAvgPoolBackward(const Tensor& dy, const Tensor& dx) {
  const int64_t planes = dy.numel(), s = dx.numel() / planes;
#pragma omp parallel for if (WorthParallel(dx.numel()))
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t q = 0; q < s; ++q) dx.f32()[p * s + q] = dy.f32()[p] / static_cast<float>(s);
}

}  // namespace mlperf::cpu
