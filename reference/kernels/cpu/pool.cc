#include "reference/kernels/ops/pool.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"

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

// Channels-last pooling: pixel (n, z, y, x) of an N[D]HWC tensor with the
// spatial size `dims` starts at this offset.
int64_t Pixel(const int64_t* dims, int64_t channels, int64_t n, int64_t z, int64_t y, int64_t x) {
  return (((n * dims[0] + z) * dims[1] + y) * dims[2] + x) * channels;
}

// Calls visit(in_pixel_offset) for the valid window positions of output pixel
// (n, z, y, x), in the same (kd, kh, kw) order as ForEachWindow.
template <typename Visit>
void ForEachWindowPixel(const ConvGeometry& g, int64_t n, int64_t z, int64_t y, int64_t x,
                        Visit visit) {
  for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
    const int64_t iz = z * g.stride[0] - g.pad_begin[0] + kd;
    if (iz < 0 || iz >= g.in[0]) continue;
    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
      const int64_t iy = y * g.stride[1] - g.pad_begin[1] + kh;
      if (iy < 0 || iy >= g.in[1]) continue;
      for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
        const int64_t ix = x * g.stride[2] - g.pad_begin[2] + kw;
        if (ix >= 0 && ix < g.in[2]) visit(Pixel(g.in, g.in_channels, n, iz, iy, ix));
      }
    }
  }
}

// One output row (n, z, y) per parallel iteration; the max runs over whole
// channel vectors. In bf16 the maximum is one of the inputs, stored as read.
template <typename T>
void MaxPoolForwardChannelsLast(const ConvGeometry& g, const T* x, T* y) {
  const int64_t od = g.out(0), oh = g.out(1), ow = g.out(2), c = g.in_channels;
  const int64_t out_dims[3] = {od, oh, ow};
#pragma omp parallel if (WorthParallel(g.batch * g.out_spatial() * c * g.kernel_volume()))
  {
    std::vector<float> best(static_cast<size_t>(c));
    float* b = best.data();
#pragma omp for
    for (int64_t line = 0; line < g.batch * od * oh; ++line) {
      const int64_t n = line / (od * oh), z = (line / oh) % od, yo = line % oh;
      for (int64_t xo = 0; xo < ow; ++xo) {
        std::fill(b, b + c, -std::numeric_limits<float>::infinity());
        ForEachWindowPixel(g, n, z, yo, xo, [&](int64_t i) {
          const T* v = x + i;
          // A select (not a conditional store) vectorises as a max.
          for (int64_t ch = 0; ch < c; ++ch) {
            const float f = StoredValue(v[ch]);
            b[ch] = f > b[ch] ? f : b[ch];
          }
        });
        T* out = y + Pixel(out_dims, c, n, z, yo, xo);
        for (int64_t ch = 0; ch < c; ++ch) {
          if constexpr (std::is_same_v<T, float>) {
            out[ch] = b[ch];
          } else {
            out[ch] = Bf16Bits(b[ch]);
          }
        }
      }
    }
  }
}

// Windows of neighbouring output rows overlap, so images (which never share
// pixels) are the unit of parallel work; each channel's gradient goes to its
// first maximum in window order, as in the channels-first path. The window is
// scanned once per block of channels, keeping each channel's best value and
// tap, rather than once per channel.
constexpr int64_t kPoolChannelBlock = 64;

// In bf16 storage (T = uint16_t) an image's sums are made in fp32 and then
// stored rounded.
template <typename T>
void MaxPoolBackwardChannelsLast(const ConvGeometry& g, const T* x, const T* dy, T* dx) {
  const int64_t od = g.out(0), oh = g.out(1), ow = g.out(2), c = g.in_channels;
  const int64_t out_dims[3] = {od, oh, ow}, image = g.in_spatial() * c;
  constexpr int64_t kMaxTaps = 64;
  MLPERF_CHECK_MSG(g.kernel_volume() <= kMaxTaps, "max pooling window larger than 64");
#pragma omp parallel for if (WorthParallel(g.batch * g.out_spatial() * c * g.kernel_volume()))
  for (int64_t n = 0; n < g.batch; ++n) {
    // The sums of image n, whose first element is at `origin` in dx.
    float* sums;
    if constexpr (std::is_same_v<T, float>) {
      sums = dx + n * image;
    } else {
      static thread_local std::vector<float> buffer;
      buffer.resize(static_cast<size_t>(image));
      sums = buffer.data();
    }
    const int64_t origin = n * image;
    std::fill(sums, sums + image, 0.0f);
    int64_t taps[kMaxTaps];
    for (int64_t z = 0; z < od; ++z)
      for (int64_t yo = 0; yo < oh; ++yo)
        for (int64_t xo = 0; xo < ow; ++xo) {
          int count = 0;
          ForEachWindowPixel(g, n, z, yo, xo, [&](int64_t i) { taps[count++] = i; });
          if (count == 0) continue;
          const T* d = dy + Pixel(out_dims, c, n, z, yo, xo);
          for (int64_t c0 = 0; c0 < c; c0 += kPoolChannelBlock) {
            const int64_t nc = std::min(kPoolChannelBlock, c - c0);
            // The winning tap is kept as a float so that its select has the
            // comparison's width and vectorises.
            float best[kPoolChannelBlock], arg[kPoolChannelBlock];
            const T* first = x + taps[0] + c0;
            for (int64_t j = 0; j < nc; ++j) {
              best[j] = StoredValue(first[j]);
              arg[j] = 0.0f;
            }
            for (int k = 1; k < count; ++k) {
              const T* v = x + taps[k] + c0;
              const float tap = static_cast<float>(k);
              // Two loops: GCC vectorises each select alone for SSE2, not
              // the pair.
              for (int64_t j = 0; j < nc; ++j) {
                const float aj = arg[j];
                arg[j] = StoredValue(v[j]) > best[j] ? tap : aj;
              }
              for (int64_t j = 0; j < nc; ++j) {
                const float vj = StoredValue(v[j]), bj = best[j];
                best[j] = vj > bj ? vj : bj;
              }
            }
            for (int64_t j = 0; j < nc; ++j)
              sums[taps[static_cast<int>(arg[j])] - origin + c0 + j] += StoredValue(d[c0 + j]);
          }
        }
    if constexpr (!std::is_same_v<T, float>) StoreBf16(sums, image, dx + origin);
  }
}

// Checks element counts for pooling plane data in either layout, that x and y
// agree on the layout, and for channels-last that channels are last.
// y[n, c] = mean over the pixels of image n; a parallel iteration owns one
// image and a block of channels, summing in the channels-first order.
constexpr int64_t kChannelBlock = 16;

template <typename T>
void GlobalAvgPoolForwardChannelsLast(const T* xp, const Tensor& x, const Tensor& y) {
  const int64_t c = LastDim(x), n = y.numel() / c, s = x.numel() / y.numel();
  MLPERF_CHECK(y.numel() == n * c && x.numel() == n * s * c);
#pragma omp parallel for collapse(2) if (WorthParallel(x.numel()))
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c0 = 0; c0 < c; c0 += kChannelBlock) {
      const int64_t nc = std::min(kChannelBlock, c - c0);
      double sum[kChannelBlock] = {};
      for (int64_t q = 0; q < s; ++q) {
        const T* row = xp + (i * s + q) * c + c0;
        for (int64_t j = 0; j < nc; ++j) sum[j] += StoredValue(row[j]);
      }
      for (int64_t j = 0; j < nc; ++j) y.f32()[i * c + c0 + j] = static_cast<float>(sum[j] / s);
    }
}

void GlobalAvgPoolBackwardChannelsLast(const Tensor& dy, const Tensor& dx) {
  const int64_t c = LastDim(dx), rows = dx.numel() / c, s = dx.numel() / dy.numel();
  MLPERF_CHECK(dy.numel() * s == dx.numel());
  const bool bf16 = IsBf16(dx);  // stored rounded
#pragma omp parallel for if (WorthParallel(dx.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* d = dy.f32() + r / s * c;
    if (bf16) {
      uint16_t* out = Bf16Data(dx) + r * c;
      for (int64_t j = 0; j < c; ++j) out[j] = Bf16Bits(d[j] / static_cast<float>(s));
    } else {
      for (int64_t j = 0; j < c; ++j) dx.f32()[r * c + j] = d[j] / static_cast<float>(s);
    }
  }
}

bool CheckPool(const ConvGeometry& g, const Tensor& x, const Tensor& y) {
  const int64_t planes = g.batch * g.in_channels;
  MLPERF_CHECK(x.numel() == planes * g.in_spatial() && y.numel() == planes * g.out_spatial());
  const bool channels_last = SameLayoutFamily(x, y);
  if (channels_last) MLPERF_CHECK(LastDim(x) == g.in_channels && LastDim(y) == g.in_channels);
  return channels_last;
}

}  // namespace

void MaxPoolForward(const ConvGeometry& g, const Tensor& x, const Tensor& y) {
  if (CheckPool(g, x, y)) {
    if (IsBf16(x)) {
      MLPERF_CHECK_MSG(IsBf16(y), "max pooling: bf16 x needs a bf16 y");
      MaxPoolForwardChannelsLast(g, Bf16Data(x), Bf16Data(y));
      return;
    }
    MaxPoolForwardChannelsLast(g, x.f32(), y.f32());
    return;
  }
  const int64_t planes = g.batch * g.in_channels;
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
  SameLayoutFamily(x, dx);
  if (CheckPool(g, dx, dy)) {
    if (IsBf16(x)) {
      MLPERF_CHECK_MSG(IsBf16(dy) && IsBf16(dx),
                       "max pooling backward: bf16 x needs bf16 dy and dx");
      MaxPoolBackwardChannelsLast<uint16_t>(g, Bf16Data(x), Bf16Data(dy), Bf16Data(dx));
      return;
    }
    MaxPoolBackwardChannelsLast(g, x.f32(), dy.f32(), dx.f32());
    return;
  }
  const int64_t planes = g.batch * g.in_channels;
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
  MLPERF_CHECK_MSG(!CheckPool(g, x, y), "average pooling is NC[D]HW only");
  const int64_t planes = g.batch * g.in_channels;
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
  MLPERF_CHECK_MSG(!CheckPool(g, dx, dy), "average pooling is NC[D]HW only");
  const int64_t planes = g.batch * g.in_channels;
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
  if (IsChannelsLast(x)) {
    if (IsBf16(x)) {
      GlobalAvgPoolForwardChannelsLast<uint16_t>(Bf16Data(x), x, y);
    } else {
      GlobalAvgPoolForwardChannelsLast(x.f32(), x, y);
    }
    return;
  }
  const int64_t planes = y.numel(), s = x.numel() / planes;
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    double sum = 0.0;
    for (int64_t q = 0; q < s; ++q) sum += x.f32()[p * s + q];
    y.f32()[p] = static_cast<float>(sum / s);
  }
}

void GlobalAvgPoolBackward(const Tensor& dy, const Tensor& dx) {
  if (IsChannelsLast(dx)) {
    GlobalAvgPoolBackwardChannelsLast(dy, dx);
    return;
  }
  const int64_t planes = dy.numel(), s = dx.numel() / planes;
#pragma omp parallel for if (WorthParallel(dx.numel()))
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t q = 0; q < s; ++q) dx.f32()[p * s + q] = dy.f32()[p] / static_cast<float>(s);
}

MLPERF_REGISTER_KERNEL(MaxPoolForward, Cpu, MaxPoolForward);
MLPERF_REGISTER_KERNEL(MaxPoolBackward, Cpu, MaxPoolBackward);
MLPERF_REGISTER_KERNEL(AvgPoolForward, Cpu, AvgPoolForward);
MLPERF_REGISTER_KERNEL(AvgPoolBackward, Cpu, AvgPoolBackward);
MLPERF_REGISTER_KERNEL(GlobalAvgPoolForward, Cpu, GlobalAvgPoolForward);
MLPERF_REGISTER_KERNEL(GlobalAvgPoolBackward, Cpu, GlobalAvgPoolBackward);

}  // namespace mlperf::cpu
