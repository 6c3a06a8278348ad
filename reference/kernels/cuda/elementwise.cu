#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "reference/core/philox.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/fast_div.h"
#include "reference/kernels/ops/elementwise.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Tensor;

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

// One grid-stride loop for every pointwise op.
template <typename Op>
__global__ void Pointwise(long long n, Op op) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    op(i);
}

template <typename Op>
void Launch(long long n, Op op) {
  Pointwise<<<Blocks(n), 256, 0, Stream()>>>(n, op);
  CUDA_CHECK_LAUNCH();
}

__device__ float Load(const void* p, DType t, long long i) {
  switch (t) {
    case DType::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

__device__ void Store(void* p, DType t, long long i, float v) {
  switch (t) {
    case DType::kBF16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
      return;
    case DType::kF16:
      static_cast<__half*>(p)[i] = __float2half_rn(v);
      return;
    default:
      static_cast<float*>(p)[i] = v;
      return;
  }
}

// y = f(inputs) elementwise over any mix of fp32/bf16/fp16, kIlp elements a
// thread with every load issued before the first store: one 2-byte element
// at a time leaves too few bytes in flight to keep the memory busy. Element
// i is read and written by one thread, so in-place ops stay correct.
constexpr int kIlp = 4;

template <int kInputs>
struct Operands {
  const void* in[kInputs];
  DType in_type[kInputs];
  void* out;
  DType out_type;
};

template <int kInputs, typename F>
__global__ void MapKernel(Operands<kInputs> o, long long n, F f) {
  const long long chunk = static_cast<long long>(blockDim.x) * kIlp;
  for (long long start = blockIdx.x * chunk; start < n;
       start += static_cast<long long>(gridDim.x) * chunk) {
    float v[kIlp][kInputs];
#pragma unroll
    for (int k = 0; k < kIlp; ++k) {
      const long long i = start + threadIdx.x + k * static_cast<long long>(blockDim.x);
#pragma unroll
      for (int a = 0; a < kInputs; ++a) v[k][a] = i < n ? Load(o.in[a], o.in_type[a], i) : 0.0f;
    }
#pragma unroll
    for (int k = 0; k < kIlp; ++k) {
      const long long i = start + threadIdx.x + k * static_cast<long long>(blockDim.x);
      if (i >= n) continue;
      if constexpr (kInputs == 1) {
        Store(o.out, o.out_type, i, f(v[k][0]));
      } else {
        Store(o.out, o.out_type, i, f(v[k][0], v[k][1]));
      }
    }
  }
}

// y = f(x) and y = f(a, b).
template <typename F>
void Map(const Tensor& x, const Tensor& y, F f) {
  MLPERF_CHECK(x.numel() == y.numel());
  const Operands<1> o{{x.data()}, {x.dtype()}, y.data(), y.dtype()};
  const long long n = y.numel();
  MapKernel<<<Blocks((n + kIlp - 1) / kIlp), 256, 0, Stream()>>>(o, n, f);
  CUDA_CHECK_LAUNCH();
}
template <typename F>
void Map(const Tensor& a, const Tensor& b, const Tensor& y, F f) {
  MLPERF_CHECK(a.numel() == y.numel() && b.numel() == y.numel());
  const Operands<2> o{{a.data(), b.data()}, {a.dtype(), b.dtype()}, y.data(), y.dtype()};
  const long long n = y.numel();
  MapKernel<<<Blocks((n + kIlp - 1) / kIlp), 256, 0, Stream()>>>(o, n, f);
  CUDA_CHECK_LAUNCH();
}

// Channels [src_begin, src_begin + width) of src [n, src_c, inner] into
// channels from dst_begin of dst [n, dst_c, inner], both of one type.
void CopyChannels(const Tensor& src, int64_t src_c, int64_t src_begin, const Tensor& dst,
                  int64_t dst_c, int64_t dst_begin, int64_t n, int64_t width, int64_t inner) {
  MLPERF_CHECK_MSG(src.dtype() == dst.dtype(), "channel copies keep the type");
  const size_t e = core::DTypeSize(src.dtype());
  CUDA_CHECK(cudaMemcpy2DAsync(
      static_cast<char*>(dst.data()) + e * dst_begin * inner, e * dst_c * inner,
      static_cast<const char*>(src.data()) + e * src_begin * inner, e * src_c * inner,
      e * width * inner, n, cudaMemcpyDeviceToDevice, Stream()));
}

// Channels-last concatenation 16 bytes a thread: y's row of channels is
// a's then b's. cudaMemcpy2DAsync copies such a row of 3D U-Net's (64
// bytes at 128^3) as one of millions of tiny rows, at about a fifth of the
// memory bandwidth (the fifth GPU check: 3.8 ms for the top level's
// concatenation). kSplit copies the other way. D divides the flat indices.
template <bool kSplit, typename D>
__global__ void ConcatRowsKernel(uint4* y, uint4* a, uint4* b, D by_row, int64_t va,
                                 int64_t count) {
  const int64_t vy = by_row.divisor(), vb = vy - va;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t row = by_row.Div(i), col = i - row * vy;
    uint4* part = col < va ? a + row * va + col : b + row * vb + (col - va);
    if constexpr (kSplit) {
      *part = y[i];
    } else {
      y[i] = *part;
    }
  }
}

// a and b side by side along the channels of y: [outer, channels, inner]
// with inner 1 when channels-last.
struct ConcatView {
  int64_t outer, ca, cb, inner;
};

ConcatView ViewConcat(const Tensor& a, const Tensor& b, const Tensor& y) {
  const bool last = detail::ChannelsLast(y);
  MLPERF_CHECK_MSG(detail::ChannelsLast(a) == last && detail::ChannelsLast(b) == last,
                   "tensors of one op must all be channels-first or all channels-last");
  const int64_t cy = last ? y.dim(y.shape().rank() - 1) : y.dim(1);
  const int64_t ca = last ? a.dim(a.shape().rank() - 1) : a.dim(1);
  const int64_t cb = last ? b.dim(b.shape().rank() - 1) : b.dim(1);
  const int64_t outer = last ? y.numel() / cy : y.dim(0);
  const int64_t inner = y.numel() / (outer * cy);
  MLPERF_CHECK_MSG(
      ca + cb == cy && a.numel() == outer * ca * inner && b.numel() == outer * cb * inner,
      "concatenated tensors must agree on everything but channels");
  return {outer, ca, cb, inner};
}

// The concatenation (or with kSplit the split) as 16-byte copies, where
// the tensors are channels-last, 16-byte aligned and both parts' rows whole
// 16-byte units; false otherwise.
template <bool kSplit>
bool ConcatRows(const ConcatView& v, const Tensor& a, const Tensor& b, const Tensor& y) {
  const int64_t e = static_cast<int64_t>(core::DTypeSize(y.dtype()));
  if (v.inner != 1 || a.dtype() != y.dtype() || b.dtype() != y.dtype() || (v.ca * e) % 16 != 0 ||
      (v.cb * e) % 16 != 0)
    return false;
  for (const void* p : {a.data(), b.data(), y.data()})
    if (reinterpret_cast<uintptr_t>(p) % 16 != 0) return false;
  const int64_t va = v.ca * e / 16, vy = va + v.cb * e / 16, count = v.outer * vy;
  if (count == 0) return true;
  auto* yp = static_cast<uint4*>(y.data());
  auto* ap = static_cast<uint4*>(a.data());
  auto* bp = static_cast<uint4*>(b.data());
  WithDivider(count, [&](auto tag) {
    using D = decltype(tag);
    ConcatRowsKernel<kSplit><<<Blocks(count), 256, 0, Stream()>>>(yp, ap, bp, D(vy), va, count);
  });
  CUDA_CHECK_LAUNCH();
  return true;
}

}  // namespace

// ReLU, GELU and dropout take any mix of fp32/bf16/fp16 (typed activation
// storage), computing in fp32; a result stored in a reduced type is rounded
// once.
void ReluForward(const Tensor& x, const Tensor& y) {
  Map(x, y, [] __device__(float v) { return v > 0.0f ? v : 0.0f; });
}

void ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  Map(y, dy, dx, [] __device__(float out, float g) { return out > 0.0f ? g : 0.0f; });
}

void GeluForward(const Tensor& x, const Tensor& y) {
  Map(x, y, [] __device__(float v) {
    return 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kGeluCoeff * v * v * v)));
  });
}

void GeluBackward(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  Map(x, dy, dx, [] __device__(float v, float g) {
    const float t = tanhf(kSqrt2OverPi * (v + kGeluCoeff * v * v * v));
    const float dinner = kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * v * v);
    return g * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * dinner);
  });
}

void TanhForward(const Tensor& x, const Tensor& y) {
  MLPERF_CHECK(x.numel() == y.numel());
  const float* in = x.f32();
  float* out = y.f32();
  Launch(x.numel(), [=] __device__(long long i) { out[i] = tanhf(in[i]); });
}

void TanhBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  const float *out = y.f32(), *g = dy.f32();
  float* d = dx.f32();
  Launch(y.numel(), [=] __device__(long long i) { d[i] = g[i] * (1.0f - out[i] * out[i]); });
}

void Add(const Tensor& a, const Tensor& b, const Tensor& y) {
  const float *pa = a.f32(), *pb = b.f32();
  float* out = y.f32();
  Launch(a.numel(), [=] __device__(long long i) { out[i] = pa[i] + pb[i]; });
}

// Any mix of fp32/bf16/fp16: a sum stored in a reduced type is rounded once.
void Accumulate(const Tensor& x, const Tensor& y) {
  Map(y, x, y, [] __device__(float sum, float v) { return sum + v; });
}

void Scale(const Tensor& x, float alpha) {
  float* p = x.f32();
  Launch(x.numel(), [=] __device__(long long i) { p[i] *= alpha; });
}

void ScaleBy(const Tensor& x, const float* alpha) {
  float* p = x.f32();
  Launch(x.numel(), [=] __device__(long long i) { p[i] *= *alpha; });
}

void Fill(const Tensor& x, float value) {
  float* p = x.f32();
  Launch(x.numel(), [=] __device__(long long i) { p[i] = value; });
}

void DropoutForward(float p, uint64_t seed, uint64_t offset, const Tensor& x, const Tensor& y,
                    const int64_t* offset_base) {
  MLPERF_CHECK(x.numel() == y.numel() && p >= 0.0f && p < 1.0f);
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = core::KeepThreshold(p);
  const void* in = x.data();
  void* out = y.data();
  const DType xt = x.dtype(), yt = y.dtype();
  const long long n = x.numel();
  // A thread per Philox block: its four words are elements 4b .. 4b + 3
  // (the stream convention), so each block is computed once, not per element;
  // the four loads are issued before the first store.
  Launch((n + 3) / 4, [=] __device__(long long b) {
    const uint64_t stream = offset + (offset_base ? static_cast<uint64_t>(*offset_base) : 0);
    float v[4];
#pragma unroll
    for (int lane = 0; lane < 4; ++lane)
      v[lane] = 4 * b + lane < n ? Load(in, xt, 4 * b + lane) : 0.0f;
    const core::Philox4x32 r = core::PhiloxBlock(seed, stream, static_cast<uint64_t>(b));
#pragma unroll
    for (int lane = 0; lane < 4; ++lane) {
      const long long i = 4 * b + lane;
      if (i < n) Store(out, yt, i, core::Kept(r.v[lane], threshold) ? v[lane] * scale : 0.0f);
    }
  });
}

void DropoutBackward(float p, uint64_t seed, uint64_t offset, const Tensor& dy, const Tensor& dx,
                     const int64_t* offset_base) {
  DropoutForward(p, seed, offset, dy, dx, offset_base);
}

void DropoutWindow(float p, uint64_t seed, uint64_t offset, const Tensor& x, const Tensor& y,
                   int64_t first_row, int64_t row_width, int64_t first_col) {
  const long long cols = x.dim(x.shape().rank() - 1);
  MLPERF_CHECK(x.numel() == y.numel() && p >= 0.0f && p < 1.0f && first_col >= 0 &&
               first_col + cols <= row_width);
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = core::KeepThreshold(p);
  const void* in = x.data();
  void* out = y.data();
  const DType xt = x.dtype(), yt = y.dtype();
  // A thread per element: its index in the larger tensor picks the Philox
  // block and the word (the LoRA adapters' inputs: small next to the GEMMs).
  Launch(x.numel(), [=] __device__(long long i) {
    const long long r = i / cols, c = i % cols;
    const uint64_t e = static_cast<uint64_t>((first_row + r) * row_width + first_col + c);
    const core::Philox4x32 block = core::PhiloxBlock(seed, offset, e / 4);
    Store(out, yt, i, core::Kept(block.v[e % 4], threshold) ? Load(in, xt, i) * scale : 0.0f);
  });
}

void AddInt64(const Tensor& x, int64_t amount) {
  int64_t* p = x.as<int64_t>();
  Launch(x.numel(), [=] __device__(long long i) { p[i] += amount; });
}

void Cast(const Tensor& src, const Tensor& dst) {
  Map(src, dst, [] __device__(float v) { return v; });
}

void RoundToPrecision(DType precision, const Tensor& src, const Tensor& dst) {
  MLPERF_CHECK(src.numel() == dst.numel());
  MLPERF_CHECK(precision == DType::kBF16 || precision == DType::kF16);
  const float* in = src.f32();
  float* out = dst.f32();
  if (precision == DType::kBF16) {
    Launch(src.numel(),
           [=] __device__(long long i) { out[i] = __bfloat162float(__float2bfloat16_rn(in[i])); });
  } else {
    Launch(src.numel(),
           [=] __device__(long long i) { out[i] = __half2float(__float2half_rn(in[i])); });
  }
}

void ConcatChannels(const Tensor& a, const Tensor& b, const Tensor& y) {
  const ConcatView v = ViewConcat(a, b, y);
  if (ConcatRows<false>(v, a, b, y)) return;
  CopyChannels(a, v.ca, 0, y, v.ca + v.cb, 0, v.outer, v.ca, v.inner);
  CopyChannels(b, v.cb, 0, y, v.ca + v.cb, v.ca, v.outer, v.cb, v.inner);
}

void SplitChannels(const Tensor& y, const Tensor& a, const Tensor& b) {
  const ConcatView v = ViewConcat(a, b, y);
  if (ConcatRows<true>(v, a, b, y)) return;
  CopyChannels(y, v.ca + v.cb, 0, a, v.ca, 0, v.outer, v.ca, v.inner);
  CopyChannels(y, v.ca + v.cb, v.ca, b, v.cb, 0, v.outer, v.cb, v.inner);
}

void SliceChannels(const Tensor& x, int64_t begin, const Tensor& out) {
  const int64_t n = x.dim(0), cx = x.dim(1), co = out.dim(1), inner = x.numel() / (n * cx);
  MLPERF_CHECK(begin >= 0 && begin + co <= cx);
  CopyChannels(x, cx, begin, out, co, 0, n, co, inner);
}

void SliceChannelsBackward(const Tensor& dout, int64_t begin, const Tensor& dx) {
  const int64_t n = dx.dim(0), cx = dx.dim(1), co = dout.dim(1), inner = dx.numel() / (n * cx);
  MLPERF_CHECK(begin >= 0 && begin + co <= cx);
  CUDA_CHECK(cudaMemsetAsync(dx.data(), 0, dx.bytes(), Stream()));
  CopyChannels(dout, co, 0, dx, cx, begin, n, co, inner);
}

MLPERF_REGISTER_KERNEL(ReluForward, Cuda, ReluForward);
MLPERF_REGISTER_KERNEL(ReluBackward, Cuda, ReluBackward);
MLPERF_REGISTER_KERNEL(GeluForward, Cuda, GeluForward);
MLPERF_REGISTER_KERNEL(GeluBackward, Cuda, GeluBackward);
MLPERF_REGISTER_KERNEL(TanhForward, Cuda, TanhForward);
MLPERF_REGISTER_KERNEL(TanhBackward, Cuda, TanhBackward);
MLPERF_REGISTER_KERNEL(Add, Cuda, Add);
MLPERF_REGISTER_KERNEL(Scale, Cuda, Scale);
MLPERF_REGISTER_KERNEL(ScaleBy, Cuda, ScaleBy);
MLPERF_REGISTER_KERNEL(Fill, Cuda, Fill);
MLPERF_REGISTER_KERNEL(DropoutForward, Cuda, DropoutForward);
MLPERF_REGISTER_KERNEL(DropoutBackward, Cuda, DropoutBackward);
MLPERF_REGISTER_KERNEL(DropoutWindow, Cuda, DropoutWindow);
MLPERF_REGISTER_KERNEL(AddInt64, Cuda, AddInt64);
MLPERF_REGISTER_KERNEL(Cast, Cuda, Cast);
MLPERF_REGISTER_KERNEL(ConcatChannels, Cuda, ConcatChannels);
MLPERF_REGISTER_KERNEL(SplitChannels, Cuda, SplitChannels);
MLPERF_REGISTER_KERNEL(SliceChannels, Cuda, SliceChannels);
MLPERF_REGISTER_KERNEL(SliceChannelsBackward, Cuda, SliceChannelsBackward);

}  // namespace mlperf::cuda
