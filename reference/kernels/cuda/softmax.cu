#include <cfloat>

#include "reference/core/philox.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/softmax.h"
#include "reference/kernels/ops/softmax.h"

namespace mlperf::cuda {
namespace {

constexpr int kThreads = 256;

// Block-wide reduction; op is max or sum. All threads get the result.
template <typename Op>
__device__ float BlockReduce(float v, Op op) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < kThreads / 32; ++w) v = op(v, partial[w]);
  __syncthreads();
  return v;
}

__global__ void SoftmaxRows(const float* x, float* y, int64_t d) {
  const float* in = x + blockIdx.x * d;
  float* out = y + blockIdx.x * d;
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < d; j += kThreads) m = fmaxf(m, in[j]);
  m = BlockReduce(m, [](float a, float b) { return fmaxf(a, b); });
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += kThreads) s += expf(in[j] - m);
  s = BlockReduce(s, [](float a, float b) { return a + b; });
  for (int64_t j = threadIdx.x; j < d; j += kThreads) out[j] = expf(in[j] - m) / s;
}

__global__ void SoftmaxRowsBackward(const float* y, const float* dy, float* dx, int64_t d) {
  const int64_t base = blockIdx.x * d;
  float dot = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += kThreads) dot += y[base + j] * dy[base + j];
  dot = BlockReduce(dot, [](float a, float b) { return a + b; });
  for (int64_t j = threadIdx.x; j < d; j += kThreads)
    dx[base + j] = y[base + j] * (dy[base + j] - dot);
}

struct DropoutDraw {
  float p, scale;
  uint32_t threshold;  // core::KeepThreshold(p)
  uint64_t seed, offset;
  const int64_t* offset_base;
  __device__ uint64_t Stream() const {
    return offset + (offset_base ? static_cast<uint64_t>(*offset_base) : 0);
  }
};

DropoutDraw DrawOf(const AttentionParams& p) {
  MLPERF_CHECK(p.dropout >= 0.0f && p.dropout < 1.0f);
  return {p.dropout,    1.0f / (1.0f - p.dropout), core::KeepThreshold(p.dropout), p.seed, p.offset,
          p.offset_base};
}

// BERT's attention rows, up to kThreads * kPerThread elements (its keys), one
// block per row: thread k keeps elements 4k .. 4k + 3 of the row in
// registers between the reduction and the write, so that each input is read
// and each dropout draw made once, a Philox block covering the four (two
// when the row starts within a block).
constexpr int kPerThread = 4;
constexpr int64_t kMaxRow = kThreads * kPerThread;

// The dropout keep flags of flat elements e .. e + 3.
__device__ void KeepFour(const DropoutDraw& drop, uint64_t stream, int64_t e, bool keep[4]) {
  const uint64_t first = static_cast<uint64_t>(e) / 4;
  const int shift = static_cast<int>(e % 4);
  const core::Philox4x32 a = core::PhiloxBlock(drop.seed, stream, first);
  const core::Philox4x32 b = shift == 0 ? a : core::PhiloxBlock(drop.seed, stream, first + 1);
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const int lane = shift + k;
    keep[k] = core::Kept(lane < 4 ? core::Word(a, lane) : core::Word(b, lane - 4), drop.threshold);
  }
}

// probs = softmax(scores + key mask) of one row of [b, h, t, t] (the mask of
// the row's sample), and dropped = dropout(probs) in its type.
__global__ void MaskedSoftmaxRows(const void* scores, core::DType st, const float* mask,
                                  float* probs, int64_t rows_per_sample, int64_t d,
                                  DropoutDraw drop, void* dropped, core::DType dt) {
  const int64_t base = blockIdx.x * d, j0 = kPerThread * static_cast<int64_t>(threadIdx.x);
  const float* keys = mask + blockIdx.x / rows_per_sample * d;
  float v[kPerThread], m = -FLT_MAX;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t j = j0 + k;
    v[k] = -FLT_MAX;
    if (j >= d) continue;
    v[k] = detail::LoadAs(scores, st, base + j) + (1.0f - keys[j]) * -10000.0f;
    m = fmaxf(m, v[k]);
  }
  m = BlockReduce(m, [](float a, float b) { return fmaxf(a, b); });
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    if (j0 + k >= d) continue;
    v[k] = expf(v[k] - m);
    s += v[k];
  }
  s = BlockReduce(s, [](float a, float b) { return a + b; });
  if (j0 >= d) return;
  bool keep[kPerThread] = {true, true, true, true};
  if (drop.p > 0.0f) KeepFour(drop, drop.Stream(), base + j0, keep);
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t j = j0 + k;
    if (j >= d) continue;
    const float prob = v[k] / s;
    probs[base + j] = prob;
    detail::StoreAs(dropped, dt, base + j, keep[k] ? prob * drop.scale : 0.0f);
  }
}

// In place is safe: every element is read before the reduction, written
// after it.
__global__ void DropoutSoftmaxRowsBackward(const float* y, const void* dattn, core::DType at,
                                           void* dx, core::DType xt, int64_t d, DropoutDraw drop) {
  const int64_t base = blockIdx.x * d, j0 = kPerThread * static_cast<int64_t>(threadIdx.x);
  bool keep[kPerThread] = {true, true, true, true};
  if (drop.p > 0.0f && j0 < d) KeepFour(drop, drop.Stream(), base + j0, keep);
  float g[kPerThread], p[kPerThread], dot = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t j = j0 + k;
    g[k] = p[k] = 0.0f;
    if (j >= d) continue;
    g[k] = detail::LoadAs(dattn, at, base + j);
    if (drop.p > 0.0f) g[k] = keep[k] ? g[k] * drop.scale : 0.0f;
    p[k] = y[base + j];
    dot += p[k] * g[k];
  }
  dot = BlockReduce(dot, [](float a, float b) { return a + b; });
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t j = j0 + k;
    if (j < d) detail::StoreAs(dx, xt, base + j, p[k] * (g[k] - dot));
  }
}

}  // namespace

void SoftmaxForward(const core::Tensor& x, const core::Tensor& y) {
  if (x.numel() == 0) return;  // no rows: a launch of no blocks would fail
  const int64_t d = x.dim(x.shape().rank() - 1), rows = x.numel() / d;
  MLPERF_CHECK(x.numel() == y.numel());
  SoftmaxRows<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(x.f32(), y.f32(), d);
  CUDA_CHECK_LAUNCH();
}

void SoftmaxBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx) {
  if (y.numel() == 0) return;
  const int64_t d = y.dim(y.shape().rank() - 1), rows = y.numel() / d;
  SoftmaxRowsBackward<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(y.f32(), dy.f32(),
                                                                              dx.f32(), d);
  CUDA_CHECK_LAUNCH();
}

void MaskedSoftmax(const core::Tensor& scores, const core::Tensor& mask, const core::Tensor& probs,
                   const AttentionParams& p, const core::Tensor& dropped) {
  MLPERF_CHECK(scores.shape().rank() == 4 && scores.numel() == probs.numel());
  const int64_t b = scores.dim(0), h = scores.dim(1), t = scores.dim(2);
  MLPERF_CHECK(scores.dim(3) == t && mask.numel() == b * t);
  MLPERF_CHECK(dropped.numel() == probs.numel());
  MLPERF_CHECK_MSG(t <= kMaxRow, "attention rows of at most 1024 keys");
  if (scores.numel() == 0) return;
  MaskedSoftmaxRows<<<static_cast<unsigned>(b * h * t), kThreads, 0, Stream()>>>(
      scores.data(), scores.dtype(), mask.f32(), probs.f32(), h * t, t, DrawOf(p), dropped.data(),
      dropped.dtype());
  CUDA_CHECK_LAUNCH();
}

void DropoutSoftmaxBackward(const AttentionParams& p, const core::Tensor& probs,
                            const core::Tensor& dattn, const core::Tensor& dscores) {
  const int64_t d = probs.dim(probs.shape().rank() - 1), rows = probs.numel() / d;
  MLPERF_CHECK(dattn.numel() == probs.numel() && dscores.numel() == probs.numel());
  MLPERF_CHECK_MSG(d <= kMaxRow, "attention rows of at most 1024 keys");
  if (probs.numel() == 0) return;
  DropoutSoftmaxRowsBackward<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      probs.f32(), dattn.data(), dattn.dtype(), dscores.data(), dscores.dtype(), d, DrawOf(p));
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(SoftmaxForward, Cuda, SoftmaxForward);
MLPERF_REGISTER_KERNEL(SoftmaxBackward, Cuda, SoftmaxBackward);

}  // namespace mlperf::cuda
