#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/fast_div.h"
#include "reference/kernels/ops/pool.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Tensor;
using detail::ActivationView;
using detail::LoadAs;
using detail::StoreAs;

constexpr int kThreads = 256;

// The window geometry in device-friendly form. D divides the flat indices:
// FastDiv when every index is below 2^31 (a multiply and a shift), else
// WideDiv (the hardware's 64-bit division, dozens of instructions).
template <typename D>
struct Window {
  int64_t in[3], out[3], kernel[3], stride[3], pad[3];
  int64_t channels;
  bool channels_last;
  D by_channels, by_in_plane, by_out_plane, by_in_w, by_in_h, by_out_w, by_out_h, by_stride[3];

  __device__ int64_t InSpatial() const { return by_in_plane.divisor(); }
  __device__ int64_t OutSpatial() const { return by_out_plane.divisor(); }
  // Memory offset of (n, c, spatial position s) in a tensor of `plane` positions.
  __device__ int64_t Offset(int64_t n, int64_t c, int64_t s, int64_t plane) const {
    return channels_last ? (n * plane + s) * channels + c : (n * channels + c) * plane + s;
  }
  // Splits a memory index over `plane` positions into n, c and the position.
  __device__ void Split(int64_t i, const D& plane, int64_t* n, int64_t* c, int64_t* s) const {
    if (channels_last) {
      const int64_t q = by_channels.Div(i);
      *c = i - q * channels;
      *n = plane.Div(q);
      *s = q - *n * plane.divisor();
    } else {
      const int64_t q = plane.Div(i);
      *s = i - q * plane.divisor();
      *n = by_channels.Div(q);
      *c = q - *n * channels;
    }
  }
  // Position s of a plane of height and width (h, w) as (depth, row, column).
  __device__ static void Unflatten(int64_t s, const D& h, const D& w, int64_t pos[3]) {
    const int64_t q = w.Div(s);
    pos[2] = s - q * w.divisor();
    pos[0] = h.Div(q);
    pos[1] = q - pos[0] * h.divisor();
  }
  __device__ void InPosition(int64_t s, int64_t pos[3]) const {
    Unflatten(s, by_in_h, by_in_w, pos);
  }
  __device__ void OutPosition(int64_t s, int64_t pos[3]) const {
    Unflatten(s, by_out_h, by_out_w, pos);
  }
  // Number of in-bounds inputs of output position o.
  __device__ int64_t ValidCount(const int64_t o[3]) const {
    int64_t count = 1;
    for (int a = 0; a < 3; ++a) {
      const int64_t begin = o[a] * stride[a] - pad[a];
      const int64_t lo = begin < 0 ? 0 : begin;
      const int64_t hi = begin + kernel[a] > in[a] ? in[a] : begin + kernel[a];
      count *= hi - lo;
    }
    return count;
  }
};

template <typename D>
Window<D> MakeWindow(const ConvGeometry& g, const Tensor& activation) {
  MLPERF_CHECK_MSG(g.in_channels == g.out_channels, "pooling keeps the channel count");
  Window<D> w;
  for (int a = 0; a < 3; ++a) {
    w.in[a] = g.in[a];
    w.out[a] = g.out(a);
    w.kernel[a] = g.kernel[a];
    w.stride[a] = g.stride[a];
    w.pad[a] = g.pad_begin[a];
    w.by_stride[a] = D(g.stride[a]);
  }
  w.channels = g.in_channels;
  w.channels_last = detail::ChannelsLast(activation);
  w.by_channels = D(g.in_channels);
  w.by_in_plane = D(g.in_spatial());
  w.by_out_plane = D(g.out_spatial());
  w.by_in_h = D(g.in[1]);
  w.by_in_w = D(g.in[2]);
  w.by_out_h = D(g.out(1));
  w.by_out_w = D(g.out(2));
  return w;
}

// Calls fn(window) with the divider the geometry's indices allow: FastDiv
// when the larger side's elements, and so every index and quotient, stay
// below its limit.
template <typename Fn>
void WithWindow(const ConvGeometry& g, const Tensor& activation, Fn&& fn) {
  const int64_t planes = g.batch * g.in_channels;
  const int64_t largest = planes * std::max(g.in_spatial(), g.out_spatial());
  WithDivider(largest, [&](auto tag) { fn(MakeWindow<decltype(tag)>(g, activation)); });
}

// Where the lane kernels below apply (channels-last fp32, bf16 or fp16, the
// channel count a multiple of a lane group, every tensor 16-byte aligned),
// calls fn(T{}, window, divider by the lane groups per position) and returns
// true; otherwise false.
template <typename Fn>
bool WithLanes(const ConvGeometry& g, const Tensor& activation,
               std::initializer_list<const void*> data, Fn&& fn) {
  if (!detail::ChannelsLast(activation)) return false;
  for (const void* p : data)
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  const auto run = [&](auto tag) {
    constexpr int64_t lanes = 16 / sizeof(tag);
    if (g.in_channels % lanes != 0) return false;
    WithWindow(g, activation, [&](const auto& w) {
      using D = std::decay_t<decltype(w.by_channels)>;
      fn(tag, w, D(g.in_channels / lanes));
    });
    return true;
  };
  switch (activation.dtype()) {
    case DType::kBF16:
      return run(__nv_bfloat16{});
    case DType::kF16:
      return run(__half{});
    case DType::kF32:
      return run(float{});
    default:
      return false;
  }
}

// Calls visit(s) for the in-bounds input positions s of output o's window,
// in the CPU twin's scan order (depth, height, width).
template <typename D, typename Visit>
__device__ void ForEachWindowInput(const Window<D>& w, const int64_t o[3], Visit visit) {
  for (int64_t kd = 0; kd < w.kernel[0]; ++kd) {
    const int64_t iz = o[0] * w.stride[0] - w.pad[0] + kd;
    if (iz < 0 || iz >= w.in[0]) continue;
    for (int64_t kh = 0; kh < w.kernel[1]; ++kh) {
      const int64_t iy = o[1] * w.stride[1] - w.pad[1] + kh;
      if (iy < 0 || iy >= w.in[1]) continue;
      for (int64_t kw = 0; kw < w.kernel[2]; ++kw) {
        const int64_t ix = o[2] * w.stride[2] - w.pad[2] + kw;
        if (ix >= 0 && ix < w.in[2]) visit((iz * w.in[1] + iy) * w.in[2] + ix);
      }
    }
  }
}

template <typename D>
__global__ void MaxPoolForwardKernel(Window<D> w, const void* x, void* y, DType t, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, c, s, o[3];
    w.Split(i, w.by_out_plane, &n, &c, &s);
    w.OutPosition(s, o);
    float best = -INFINITY;  // padding never wins; NaN inputs are skipped like on the CPU
    ForEachWindowInput(w, o, [&](int64_t q) {
      const float v = LoadAs(x, t, w.Offset(n, c, q, w.InSpatial()));
      if (v > best) best = v;
    });
    StoreAs(y, t, i, best);
  }
}

// Calls visit(output position, flattened output) for every output window
// that contains input position p, in increasing output order (the order the
// CPU twin accumulates in).
template <typename D, typename Visit>
__device__ void ForEachCoveringOutput(const Window<D>& w, const int64_t p[3], Visit visit) {
  int64_t lo[3], hi[3];
  for (int a = 0; a < 3; ++a) {
    // o*stride - pad <= p <= o*stride - pad + kernel - 1
    const int64_t num = p[a] + w.pad[a] - w.kernel[a] + 1;
    lo[a] = num <= 0 ? 0 : w.by_stride[a].Div(num + w.stride[a] - 1);
    hi[a] = w.by_stride[a].Div(p[a] + w.pad[a]);
    if (hi[a] > w.out[a] - 1) hi[a] = w.out[a] - 1;
  }
  int64_t o[3];
  for (o[0] = lo[0]; o[0] <= hi[0]; ++o[0])
    for (o[1] = lo[1]; o[1] <= hi[1]; ++o[1])
      for (o[2] = lo[2]; o[2] <= hi[2]; ++o[2])
        visit(o, (o[0] * w.out[1] + o[1]) * w.out[2] + o[2]);
}

// Input position p's place in output o's window (ForEachWindowInput's
// order, out-of-bounds positions counted).
template <typename D>
__device__ int64_t WindowCode(const Window<D>& w, const int64_t o[3], const int64_t p[3]) {
  int64_t code = 0;
  for (int a = 0; a < 3; ++a) code = code * w.kernel[a] + p[a] - (o[a] * w.stride[a] - w.pad[a]);
  return code;
}

constexpr uint16_t kNoInput = 0xffff;  // a window without inputs

// Where each output's gradient goes: the WindowCode of the maximum the CPU
// twin picks, the first in-bounds input replaced by any strictly greater one
// (so a NaN that comes first keeps the gradient).
template <typename D>
__global__ void MaxPoolArgMaxKernel(Window<D> w, const void* x, DType t, uint16_t* code,
                                    int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, c, s, o[3];
    w.Split(i, w.by_out_plane, &n, &c, &s);
    w.OutPosition(s, o);
    uint16_t arg = kNoInput;
    float best = 0.0f;
    ForEachWindowInput(w, o, [&](int64_t q) {
      const float v = LoadAs(x, t, w.Offset(n, c, q, w.InSpatial()));
      if (arg == kNoInput || v > best) {
        int64_t p[3];
        w.InPosition(q, p);
        arg = static_cast<uint16_t>(WindowCode(w, o, p));
        best = v;
      }
    });
    code[i] = arg;
  }
}

// Gathers, for each input, the gradients of the windows whose maximum it is
// (their codes from MaxPoolArgMaxKernel), in increasing output order (the
// order the CPU twin accumulates in): deterministic, no atomics.
template <typename D>
__global__ void MaxPoolBackwardKernel(Window<D> w, const uint16_t* code, const void* dy, void* dx,
                                      DType t, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, c, s, p[3];
    w.Split(i, w.by_in_plane, &n, &c, &s);
    w.InPosition(s, p);
    float sum = 0.0f;
    ForEachCoveringOutput(w, p, [&](const int64_t o[3], int64_t os) {
      const int64_t j = w.Offset(n, c, os, w.OutSpatial());
      if (code[j] == WindowCode(w, o, p)) sum += LoadAs(dy, t, j);
    });
    StoreAs(dx, t, i, sum);
  }
}

// Channels-last max pooling, 16 bytes of neighbouring channels per thread
// (8 bf16/fp16 or 4 fp32 channels at one position): the index arithmetic of
// a position is done once for all of them and every access is one 16-byte
// transaction, where the kernels above divide and load per element. Each
// channel sees the same comparisons and sums in the same order as there, so
// the bits are the same. ResNet-50's stem max pool runs here.
template <typename T>
struct alignas(16) Lanes {
  static constexpr int kCount = 16 / sizeof(T);
  T v[kCount];
};
template <int V>
struct alignas(2 * V) LaneCodes {
  uint16_t c[V];
};

template <typename T>
__device__ __forceinline__ Lanes<T> LoadLanes(const T* p, int64_t i) {
  return *reinterpret_cast<const Lanes<T>*>(p + i);
}

// Lane group i of a tensor of `plane` positions: image n, position s and
// first channel c0 (the group's element offset is i * kCount).
template <typename D>
__device__ __forceinline__ void SplitLanes(const D& by_groups, const D& plane, int lanes, int64_t i,
                                           int64_t* n, int64_t* s, int64_t* c0) {
  const int64_t q = by_groups.Div(i);
  *c0 = (i - q * by_groups.divisor()) * lanes;
  *n = plane.Div(q);
  *s = q - *n * plane.divisor();
}

template <typename T, typename D>
__global__ void MaxPoolForwardLanes(Window<D> w, D by_groups, const T* x, T* y, int64_t count) {
  constexpr int V = Lanes<T>::kCount;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, s, c0, o[3];
    SplitLanes(by_groups, w.by_out_plane, V, i, &n, &s, &c0);
    w.OutPosition(s, o);
    float best[V];
    for (int j = 0; j < V; ++j) best[j] = -INFINITY;
    ForEachWindowInput(w, o, [&](int64_t q) {
      const Lanes<T> v = LoadLanes(x, w.Offset(n, c0, q, w.InSpatial()));
      for (int j = 0; j < V; ++j) {
        const float f = detail::ToFloat(v.v[j]);
        if (f > best[j]) best[j] = f;
      }
    });
    Lanes<T> out;
    for (int j = 0; j < V; ++j) out.v[j] = detail::FromFloat<T>(best[j]);
    *reinterpret_cast<Lanes<T>*>(y + i * V) = out;
  }
}

template <typename T, typename D>
__global__ void MaxPoolArgMaxLanes(Window<D> w, D by_groups, const T* x, uint16_t* code,
                                   int64_t count) {
  constexpr int V = Lanes<T>::kCount;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, s, c0, o[3];
    SplitLanes(by_groups, w.by_out_plane, V, i, &n, &s, &c0);
    w.OutPosition(s, o);
    LaneCodes<V> arg;
    float best[V];
    for (int j = 0; j < V; ++j) {
      arg.c[j] = kNoInput;
      best[j] = 0.0f;
    }
    ForEachWindowInput(w, o, [&](int64_t q) {
      const Lanes<T> v = LoadLanes(x, w.Offset(n, c0, q, w.InSpatial()));
      int64_t p[3];
      w.InPosition(q, p);
      const auto here = static_cast<uint16_t>(WindowCode(w, o, p));
      for (int j = 0; j < V; ++j) {
        const float f = detail::ToFloat(v.v[j]);
        if (arg.c[j] == kNoInput || f > best[j]) {
          arg.c[j] = here;
          best[j] = f;
        }
      }
    });
    *reinterpret_cast<LaneCodes<V>*>(code + i * V) = arg;
  }
}

template <typename T, typename D>
__global__ void MaxPoolBackwardLanes(Window<D> w, D by_groups, const uint16_t* code, const T* dy,
                                     T* dx, int64_t count) {
  constexpr int V = Lanes<T>::kCount;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, s, c0, p[3];
    SplitLanes(by_groups, w.by_in_plane, V, i, &n, &s, &c0);
    w.InPosition(s, p);
    float sum[V] = {};
    ForEachCoveringOutput(w, p, [&](const int64_t o[3], int64_t os) {
      const int64_t j = w.Offset(n, c0, os, w.OutSpatial());
      const LaneCodes<V> k = *reinterpret_cast<const LaneCodes<V>*>(code + j);
      const Lanes<T> g = LoadLanes(dy, j);
      const auto here = static_cast<uint16_t>(WindowCode(w, o, p));
      for (int l = 0; l < V; ++l)
        if (k.c[l] == here) sum[l] += detail::ToFloat(g.v[l]);
    });
    Lanes<T> out;
    for (int l = 0; l < V; ++l) out.v[l] = detail::FromFloat<T>(sum[l]);
    *reinterpret_cast<Lanes<T>*>(dx + i * V) = out;
  }
}

template <typename D>
__global__ void AvgPoolForwardKernel(Window<D> w, bool include_pad, const void* x, void* y, DType t,
                                     int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, c, s, o[3];
    w.Split(i, w.by_out_plane, &n, &c, &s);
    w.OutPosition(s, o);
    float sum = 0.0f;
    ForEachWindowInput(w, o,
                       [&](int64_t q) { sum += LoadAs(x, t, w.Offset(n, c, q, w.InSpatial())); });
    const int64_t divisor = include_pad ? w.kernel[0] * w.kernel[1] * w.kernel[2] : w.ValidCount(o);
    StoreAs(y, t, i, sum / static_cast<float>(divisor));
  }
}

template <typename D>
__global__ void AvgPoolBackwardKernel(Window<D> w, bool include_pad, const void* dy, void* dx,
                                      DType t, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, c, s, p[3];
    w.Split(i, w.by_in_plane, &n, &c, &s);
    w.InPosition(s, p);
    float sum = 0.0f;
    ForEachCoveringOutput(w, p, [&](const int64_t o[3], int64_t os) {
      const int64_t divisor =
          include_pad ? w.kernel[0] * w.kernel[1] * w.kernel[2] : w.ValidCount(o);
      sum += LoadAs(dy, t, w.Offset(n, c, os, w.OutSpatial())) / static_cast<float>(divisor);
    });
    StoreAs(dx, t, i, sum);
  }
}

// One block per (n, c) plane.
__global__ void GlobalAvgPoolForwardKernel(const void* x, DType t, ActivationView v, void* y,
                                           DType yt) {
  const int64_t plane = blockIdx.x, n = plane / v.channels, c = plane % v.channels;
  float sum = 0.0f;
  for (int64_t s = threadIdx.x; s < v.spatial; s += kThreads)
    sum += LoadAs(x, t, v.Offset(n, c, s));
  sum = detail::BlockSum<kThreads>(sum);
  if (threadIdx.x == 0) StoreAs(y, yt, plane, sum / static_cast<float>(v.spatial));
}

// Channels-last: one thread per (n, c), so that neighbouring threads read
// neighbouring channels (a block per plane would read one value in every
// C, with most of its threads idle at ResNet-50's 7x7).
__global__ void GlobalAvgPoolRowsKernel(const void* x, DType t, ActivationView v, void* y, DType yt,
                                        int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t n = i / v.channels, c = i % v.channels;
    float sum = 0.0f;
    for (int64_t s = 0; s < v.spatial; ++s) sum += LoadAs(x, t, v.Offset(n, c, s));
    StoreAs(y, yt, i, sum / static_cast<float>(v.spatial));
  }
}

__global__ void GlobalAvgPoolBackwardKernel(const void* dy, DType dyt, ActivationView v, void* dx,
                                            DType t, int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = v.channels_last ? i % v.channels : (i / v.spatial) % v.channels;
    const int64_t n = i / (v.channels * v.spatial);
    StoreAs(dx, t, i, LoadAs(dy, dyt, n * v.channels + c) / static_cast<float>(v.spatial));
  }
}

void CheckPool(const ConvGeometry& g, const Tensor& in, const Tensor& out) {
  const int64_t planes = g.batch * g.in_channels;
  MLPERF_CHECK(in.numel() == planes * g.in_spatial() && out.numel() == planes * g.out_spatial());
  MLPERF_CHECK(in.dtype() == out.dtype());
}

// Without outputs (a window larger than the padded input) no input takes a
// gradient; the window's dividers would be zero.
void ZeroEmpty(const Tensor& dx) {
  if (dx.numel() > 0)
    CUDA_CHECK(cudaMemsetAsync(dx.data(), 0, dx.numel() * core::DTypeSize(dx.dtype()), Stream()));
}

}  // namespace

void MaxPoolForward(const ConvGeometry& g, const Tensor& x, const Tensor& y) {
  CheckPool(g, x, y);
  if (y.numel() == 0) return;
  const bool lanes =
      WithLanes(g, x, {x.data(), y.data()}, [&](auto tag, const auto& w, const auto& by_groups) {
        using T = decltype(tag);
        const int64_t count = y.numel() / Lanes<T>::kCount;
        MaxPoolForwardLanes<<<Blocks(count), kThreads, 0, Stream()>>>(
            w, by_groups, static_cast<const T*>(x.data()), static_cast<T*>(y.data()), count);
      });
  if (!lanes) {
    WithWindow(g, x, [&](const auto& w) {
      MaxPoolForwardKernel<<<Blocks(y.numel()), kThreads, 0, Stream()>>>(w, x.data(), y.data(),
                                                                         x.dtype(), y.numel());
    });
  }
  CUDA_CHECK_LAUNCH();
}

void MaxPoolBackward(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dx) {
  CheckPool(g, dx, dy);
  MLPERF_CHECK(x.numel() == dx.numel() && x.dtype() == dx.dtype());
  MLPERF_CHECK_MSG(g.kernel[0] * g.kernel[1] * g.kernel[2] < kNoInput,
                   "max pool window too large for its 16-bit argmax codes");
  if (dy.numel() == 0) return ZeroEmpty(dx);
  // The argmax of each window once, rather than once per input it covers
  // (up to 4 times for ResNet's 3x3/2, each 9 loads).
  auto* code = static_cast<uint16_t*>(Scratch(dy.numel() * sizeof(uint16_t), kScratchReduce));
  const bool lanes = WithLanes(
      g, x, {x.data(), dy.data(), dx.data()}, [&](auto tag, const auto& w, const auto& by_groups) {
        using T = decltype(tag);
        constexpr int V = Lanes<T>::kCount;
        MaxPoolArgMaxLanes<<<Blocks(dy.numel() / V), kThreads, 0, Stream()>>>(
            w, by_groups, static_cast<const T*>(x.data()), code, dy.numel() / V);
        CUDA_CHECK_LAUNCH();
        MaxPoolBackwardLanes<<<Blocks(dx.numel() / V), kThreads, 0, Stream()>>>(
            w, by_groups, code, static_cast<const T*>(dy.data()), static_cast<T*>(dx.data()),
            dx.numel() / V);
      });
  if (!lanes) {
    WithWindow(g, x, [&](const auto& w) {
      MaxPoolArgMaxKernel<<<Blocks(dy.numel()), kThreads, 0, Stream()>>>(w, x.data(), x.dtype(),
                                                                         code, dy.numel());
      CUDA_CHECK_LAUNCH();
      MaxPoolBackwardKernel<<<Blocks(dx.numel()), kThreads, 0, Stream()>>>(
          w, code, dy.data(), dx.data(), dx.dtype(), dx.numel());
    });
  }
  CUDA_CHECK_LAUNCH();
}

void AvgPoolForward(const ConvGeometry& g, bool count_include_pad, const Tensor& x,
                    const Tensor& y) {
  CheckPool(g, x, y);
  if (y.numel() == 0) return;
  WithWindow(g, x, [&](const auto& w) {
    AvgPoolForwardKernel<<<Blocks(y.numel()), kThreads, 0, Stream()>>>(
        w, count_include_pad, x.data(), y.data(), x.dtype(), y.numel());
  });
  CUDA_CHECK_LAUNCH();
}

void AvgPoolBackward(const ConvGeometry& g, bool count_include_pad, const Tensor& dy,
                     const Tensor& dx) {
  CheckPool(g, dx, dy);
  if (dy.numel() == 0) return ZeroEmpty(dx);
  WithWindow(g, dx, [&](const auto& w) {
    AvgPoolBackwardKernel<<<Blocks(dx.numel()), kThreads, 0, Stream()>>>(
        w, count_include_pad, dy.data(), dx.data(), dx.dtype(), dx.numel());
  });
  CUDA_CHECK_LAUNCH();
}

void GlobalAvgPoolForward(const Tensor& x, const Tensor& y) {
  const ActivationView v = detail::ViewOf(x);
  MLPERF_CHECK(y.numel() == x.dim(0) * v.channels);
  if (v.channels_last) {
    GlobalAvgPoolRowsKernel<<<Blocks(y.numel()), kThreads, 0, Stream()>>>(
        x.data(), x.dtype(), v, y.data(), y.dtype(), y.numel());
  } else {
    GlobalAvgPoolForwardKernel<<<static_cast<unsigned>(y.numel()), kThreads, 0, Stream()>>>(
        x.data(), x.dtype(), v, y.data(), y.dtype());
  }
  CUDA_CHECK_LAUNCH();
}

void GlobalAvgPoolBackward(const Tensor& dy, const Tensor& dx) {
  const ActivationView v = detail::ViewOf(dx);
  MLPERF_CHECK(dy.numel() == dx.dim(0) * v.channels);
  GlobalAvgPoolBackwardKernel<<<Blocks(dx.numel()), kThreads, 0, Stream()>>>(
      dy.data(), dy.dtype(), v, dx.data(), dx.dtype(), dx.numel());
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(MaxPoolForward, Cuda, MaxPoolForward);
MLPERF_REGISTER_KERNEL(MaxPoolBackward, Cuda, MaxPoolBackward);
MLPERF_REGISTER_KERNEL(AvgPoolForward, Cuda, AvgPoolForward);
MLPERF_REGISTER_KERNEL(AvgPoolBackward, Cuda, AvgPoolBackward);
MLPERF_REGISTER_KERNEL(GlobalAvgPoolForward, Cuda, GlobalAvgPoolForward);
MLPERF_REGISTER_KERNEL(GlobalAvgPoolBackward, Cuda, GlobalAvgPoolBackward);

}  // namespace mlperf::cuda
