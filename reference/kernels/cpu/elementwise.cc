#include "reference/kernels/cpu/elementwise.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "reference/core/philox.h"
#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/philox_x8.h"
#include "reference/kernels/cpu/round.h"
#include "reference/kernels/cpu/vec_math.h"
#include "reference/kernels/ops/elementwise.h"

namespace mlperf::cpu {
namespace {

using core::DType;
using core::Tensor;

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCoeff = 0.044715f;

float LoadAsFloat(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kF32:
      return t.as<float>()[i];
    case DType::kBF16:
      return core::Bf16ToFloat(t.as<uint16_t>()[i]);
    case DType::kF16:
      return core::HalfToFloat(t.as<uint16_t>()[i]);
    default:
      MLPERF_CHECK_MSG(false, "Cast supports floating types only");
  }
}

void StoreFromFloat(const Tensor& t, int64_t i, float v) {
  switch (t.dtype()) {
    case DType::kF32:
      t.as<float>()[i] = v;
      return;
    case DType::kBF16:
      t.as<uint16_t>()[i] = core::FloatToBf16(v);
      return;
    case DType::kF16:
      t.as<uint16_t>()[i] = core::FloatToHalf(v);
      return;
    default:
      MLPERF_CHECK_MSG(false, "Cast supports floating types only");
  }
}

// Copies `width`-channel blocks between [N, C_src, S] and [N, C_dst, S]
// (channels-last tensors are [N*S, C, 1]).
// Elements of `size` bytes (fp32, or bf16 storage).
void CopyChannels(const void* src, int64_t src_c, int64_t src_begin, void* dst, int64_t dst_c,
                  int64_t dst_begin, int64_t n, int64_t width, int64_t inner, int64_t size) {
  const auto* s = static_cast<const std::byte*>(src);
  auto* d = static_cast<std::byte*>(dst);
#pragma omp parallel for if (WorthParallel(n * width * inner))
  for (int64_t i = 0; i < n; ++i)
    std::memcpy(d + (i * dst_c + dst_begin) * inner * size,
                s + (i * src_c + src_begin) * inner * size,
                static_cast<size_t>(size * width * inner));
}

// a and b side by side along the channels of y, in either layout.
struct ConcatView {
  int64_t outer, ca, cb, inner;
};

ConcatView ViewConcat(const Tensor& a, const Tensor& b, const Tensor& y) {
  SameLayoutFamily(a, y);
  SameLayoutFamily(b, y);
  MLPERF_CHECK_MSG(a.dtype() == y.dtype() && b.dtype() == y.dtype(),
                   "concatenated tensors must agree on their type");
  const ChannelView va = ViewChannels(a), vb = ViewChannels(b), vy = ViewChannels(y);
  MLPERF_CHECK_MSG(va.channels + vb.channels == vy.channels && va.outer == vy.outer &&
                       vb.outer == vy.outer && va.inner == vy.inner && vb.inner == vy.inner,
                   "concatenated tensors must agree on everything but channels");
  return {vy.outer, va.channels, vb.channels, vy.inner};
}

}  // namespace

void ReluForward(const Tensor& x, const Tensor& y) {
  MLPERF_CHECK(x.numel() == y.numel());
  const float* in = x.f32();
  float* out = y.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] > 0.0f ? in[i] : 0.0f;
}

void ReluBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  MLPERF_CHECK(y.numel() == dy.numel() && dy.numel() == dx.numel());
  const float* out = y.f32();
  const float* grad = dy.f32();
  float* in_grad = dx.f32();
  const int64_t n = y.numel();
#pragma omp parallel for if (WorthParallel(n))
  // Both loads unconditional, so the select vectorises instead of branching
  // on a sign that is random from one element to the next.
  for (int64_t i = 0; i < n; ++i) {
    const float g = grad[i];
    in_grad[i] = out[i] > 0.0f ? g : 0.0f;
  }
}

// 0.5 x (1 + tanh(u)) = x sigmoid(2u): one exp, no cancellation for very
// negative u, and 1 - sigmoid(2u) = exp(-2u) sigmoid(2u) in the backward.
// Chunks of kGeluChunk elements: exp(-2u) into a buffer on the stack, then
// the rest (see vec_math.h for why the exp has a loop of its own).
namespace {

constexpr int64_t kGeluChunk = 256;
// Elements per chunk of the dropout mask, a multiple of PhiloxBlocks8's 32.
constexpr int64_t kDropoutChunk = 256;

// e[j] = exp(-2u) of x[0, n).
void GeluExp(const float* x, int64_t n, float* e) {
  for (int64_t j = 0; j < n; ++j)
    e[j] = -2.0f * kSqrt2OverPi * (x[j] + kGeluCoeff * x[j] * x[j] * x[j]);
  ExpInPlace(e, n);
}

}  // namespace

void GeluForward(const Tensor& x, const Tensor& y) {
  MLPERF_CHECK(x.numel() == y.numel());
  const float* in = x.f32();
  float* out = y.f32();
  const int64_t n = x.numel();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t begin = 0; begin < n; begin += kGeluChunk) {
    const int64_t m = std::min(kGeluChunk, n - begin);
    const float* v = in + begin;
    float e[kGeluChunk];
    GeluExp(v, m, e);
    for (int64_t j = 0; j < m; ++j) out[begin + j] = v[j] / (1.0f + e[j]);
  }
}

void GeluBackward(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  MLPERF_CHECK(x.numel() == dy.numel() && dy.numel() == dx.numel());
  const float* in = x.f32();
  const float* grad = dy.f32();
  float* in_grad = dx.f32();
  const int64_t n = x.numel();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t begin = 0; begin < n; begin += kGeluChunk) {
    const int64_t m = std::min(kGeluChunk, n - begin);
    const float* v = in + begin;
    float e[kGeluChunk];
    GeluExp(v, m, e);
    for (int64_t j = 0; j < m; ++j) {
      const float s = 1.0f / (1.0f + e[j]);
      const float one_minus_s = e[j] * s;  // at most 1, where e alone may be near FLT_MAX
      const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCoeff * v[j] * v[j]);
      // d/dv [v s(u)] with ds/du = 2 s (1 - s).
      in_grad[begin + j] = grad[begin + j] * (s + 2.0f * v[j] * s * one_minus_s * du);
    }
  }
}

void TanhForward(const Tensor& x, const Tensor& y) {
  MLPERF_CHECK(x.numel() == y.numel());
  const float* in = x.f32();
  float* out = y.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = std::tanh(in[i]);
}

void TanhBackward(const Tensor& y, const Tensor& dy, const Tensor& dx) {
  MLPERF_CHECK(y.numel() == dy.numel() && dy.numel() == dx.numel());
  const float *out = y.f32(), *g = dy.f32();
  float* d = dx.f32();
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t i = 0; i < y.numel(); ++i) d[i] = g[i] * (1.0f - out[i] * out[i]);
}

// The pointers are read once: Tensor::f32() checks the dtype, and a check in
// the loop body would keep these memory-bound loops from vectorising.
void Add(const Tensor& a, const Tensor& b, const Tensor& y) {
  MLPERF_CHECK(a.numel() == b.numel() && b.numel() == y.numel());
  const float* pa = a.f32();
  const float* pb = b.f32();
  float* py = y.f32();
  const int64_t n = a.numel();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) py[i] = pa[i] + pb[i];
}

void Accumulate(const Tensor& x, const Tensor& y, DType round_to) {
  MLPERF_CHECK(x.numel() == y.numel());
  if (IsBf16(y)) {  // bf16 storage: the sum rounded as it is stored
    MLPERF_CHECK_MSG(IsBf16(x), "accumulate: a bf16 y needs a bf16 x");
    const uint16_t* bx = Bf16Data(x);
    uint16_t* by = Bf16Data(y);
    const int64_t n = x.numel();
#pragma omp parallel for if (WorthParallel(n))
    for (int64_t i = 0; i < n; ++i) by[i] = Bf16Bits(Bf16Value(by[i]) + Bf16Value(bx[i]));
    return;
  }
  const float* px = x.f32();
  float* py = y.f32();
  const int64_t n = x.numel();
  if (round_to == DType::kBF16) {
#pragma omp parallel for if (WorthParallel(n))
    for (int64_t i = 0; i < n; ++i) py[i] = RoundToBf16(py[i] + px[i]);
  } else if (round_to == DType::kF16) {
#pragma omp parallel for if (WorthParallel(n))
    for (int64_t i = 0; i < n; ++i) py[i] = RoundToHalf(py[i] + px[i]);
  } else {
#pragma omp parallel for if (WorthParallel(n))
    for (int64_t i = 0; i < n; ++i) py[i] += px[i];
  }
}

void Scale(const Tensor& x, float alpha) {
  float* px = x.f32();
  const int64_t n = x.numel();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) px[i] *= alpha;
}

void ScaleBy(const Tensor& x, const float* alpha) { Scale(x, *alpha); }

void Fill(const Tensor& x, float value) {
  float* px = x.f32();
  const int64_t n = x.numel();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) px[i] = value;
}

void DropoutForward(float p, uint64_t seed, uint64_t offset, const Tensor& x, const Tensor& y,
                    const int64_t* offset_base) {
  MLPERF_CHECK(x.numel() == y.numel() && p >= 0.0f && p < 1.0f);
  if (offset_base != nullptr) offset += static_cast<uint64_t>(*offset_base);
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = core::KeepThreshold(p);  // the mask from an integer compare
  const float* in = x.f32();
  float* out = y.f32();
  const int64_t n = x.numel();
  // Per chunk, the Philox blocks first (one per 4 elements, the stream
  // convention of core/philox.h), then the mask in a loop that vectorises
  // (the input loaded unconditionally, so that the select needs no branch).
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t begin = 0; begin < n; begin += kDropoutChunk) {
    const int64_t m = std::min(kDropoutChunk, n - begin);
    uint32_t bits[kDropoutChunk];
    for (int64_t j = 0; j < m; j += 32)
      PhiloxBlocks8(seed, offset, static_cast<uint64_t>((begin + j) / 4), bits + j);
    for (int64_t j = 0; j < m; ++j) {
      const float v = in[begin + j];
      out[begin + j] = core::Kept(bits[j], threshold) ? v * scale : 0.0f;
    }
  }
}

void DropoutBackward(float p, uint64_t seed, uint64_t offset, const Tensor& dy, const Tensor& dx,
                     const int64_t* offset_base) {
  DropoutForward(p, seed, offset, dy, dx, offset_base);
}

void DropoutWindow(float p, uint64_t seed, uint64_t offset, const Tensor& x, const Tensor& y,
                   int64_t first_row, int64_t row_width, int64_t first_col) {
  const int64_t cols = x.dim(x.shape().rank() - 1), rows = x.numel() / cols;
  MLPERF_CHECK(x.numel() == y.numel() && p >= 0.0f && p < 1.0f && first_col >= 0 &&
               first_col + cols <= row_width);
  const float scale = 1.0f / (1.0f - p);
  const uint32_t threshold = core::KeepThreshold(p);
  const float* in = x.f32();
  float* out = y.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    // The row's elements in the larger tensor, from the Philox block
    // holding the first; 32 words (8 blocks) at a time.
    const uint64_t first = static_cast<uint64_t>((first_row + r) * row_width + first_col);
    const int64_t skip = static_cast<int64_t>(first % 4);
    uint32_t bits[32];
    for (int64_t done = -skip; done < cols; done += 32) {
      PhiloxBlocks8(seed, offset, static_cast<uint64_t>(static_cast<int64_t>(first) + done) / 4,
                    bits);
      for (int64_t j = std::max<int64_t>(0, -done); j < 32 && done + j < cols; ++j) {
        const int64_t c = done + j;
        out[r * cols + c] = core::Kept(bits[j], threshold) ? in[r * cols + c] * scale : 0.0f;
      }
    }
  }
}

void AddInt64(const Tensor& x, int64_t amount) {
  int64_t* p = x.as<int64_t>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] += amount;
}

void Cast(const Tensor& src, const Tensor& dst) {
  MLPERF_CHECK(src.numel() == dst.numel());
#pragma omp parallel for if (WorthParallel(src.numel()))
  for (int64_t i = 0; i < src.numel(); ++i) StoreFromFloat(dst, i, LoadAsFloat(src, i));
}

void RoundToPrecision(DType precision, const Tensor& src, const Tensor& dst) {
  MLPERF_CHECK(src.numel() == dst.numel());
  MLPERF_CHECK(precision == DType::kBF16 || precision == DType::kF16);
  const float* in = src.f32();
  float* out = dst.f32();
  const int64_t n = src.numel();
  if (precision == DType::kBF16) {
#pragma omp parallel for if (WorthParallel(n))
    for (int64_t i = 0; i < n; ++i) out[i] = RoundToBf16(in[i]);
  } else {
#pragma omp parallel for if (WorthParallel(n))
    for (int64_t i = 0; i < n; ++i) out[i] = RoundToHalf(in[i]);
  }
}

void ConcatChannels(const Tensor& a, const Tensor& b, const Tensor& y) {
  const auto [n, ca, cb, inner] = ViewConcat(a, b, y);
  const int64_t size = core::DTypeSize(y.dtype());
  CopyChannels(a.data(), ca, 0, y.data(), ca + cb, 0, n, ca, inner, size);
  CopyChannels(b.data(), cb, 0, y.data(), ca + cb, ca, n, cb, inner, size);
}

void SplitChannels(const Tensor& y, const Tensor& a, const Tensor& b) {
  const auto [n, ca, cb, inner] = ViewConcat(a, b, y);
  const int64_t size = core::DTypeSize(y.dtype());
  CopyChannels(y.data(), ca + cb, 0, a.data(), ca, 0, n, ca, inner, size);
  CopyChannels(y.data(), ca + cb, ca, b.data(), cb, 0, n, cb, inner, size);
}

void SliceChannels(const Tensor& x, int64_t begin, const Tensor& out) {
  const int64_t n = x.dim(0), cx = x.dim(1), co = out.dim(1), inner = x.numel() / (n * cx);
  MLPERF_CHECK(begin >= 0 && begin + co <= cx && out.numel() == n * co * inner);
  CopyChannels(x.f32(), cx, begin, out.f32(), co, 0, n, co, inner, sizeof(float));
}

void SliceChannelsBackward(const Tensor& dout, int64_t begin, const Tensor& dx) {
  const int64_t n = dx.dim(0), cx = dx.dim(1), co = dout.dim(1), inner = dx.numel() / (n * cx);
  MLPERF_CHECK(begin >= 0 && begin + co <= cx && dout.numel() == n * co * inner);
  std::memset(dx.data(), 0, dx.bytes());
  CopyChannels(dout.f32(), co, 0, dx.f32(), cx, begin, n, co, inner, sizeof(float));
}

MLPERF_REGISTER_KERNEL(ReluForward, Cpu, ReluForward);
MLPERF_REGISTER_KERNEL(ReluBackward, Cpu, ReluBackward);
MLPERF_REGISTER_KERNEL(GeluForward, Cpu, GeluForward);
MLPERF_REGISTER_KERNEL(GeluBackward, Cpu, GeluBackward);
MLPERF_REGISTER_KERNEL(TanhForward, Cpu, TanhForward);
MLPERF_REGISTER_KERNEL(TanhBackward, Cpu, TanhBackward);
MLPERF_REGISTER_KERNEL(Add, Cpu, Add);
MLPERF_REGISTER_KERNEL(Scale, Cpu, Scale);
MLPERF_REGISTER_KERNEL(ScaleBy, Cpu, ScaleBy);
MLPERF_REGISTER_KERNEL(Fill, Cpu, Fill);
MLPERF_REGISTER_KERNEL(DropoutForward, Cpu, DropoutForward);
MLPERF_REGISTER_KERNEL(DropoutBackward, Cpu, DropoutBackward);
MLPERF_REGISTER_KERNEL(DropoutWindow, Cpu, DropoutWindow);
MLPERF_REGISTER_KERNEL(AddInt64, Cpu, AddInt64);
MLPERF_REGISTER_KERNEL(Cast, Cpu, Cast);
MLPERF_REGISTER_KERNEL(ConcatChannels, Cpu, ConcatChannels);
MLPERF_REGISTER_KERNEL(SplitChannels, Cpu, SplitChannels);
MLPERF_REGISTER_KERNEL(SliceChannels, Cpu, SliceChannels);
MLPERF_REGISTER_KERNEL(SliceChannelsBackward, Cpu, SliceChannelsBackward);

}  // namespace mlperf::cpu
