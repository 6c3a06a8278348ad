#include <cfloat>

#include "reference/core/philox.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/softmax.h"

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

// One block per row of [b, h, t, t]; the key mask of the row's sample.
__global__ void MaskedSoftmaxRows(const void* scores, core::DType st, const float* mask,
                                  float* probs, int64_t rows_per_sample, int64_t d) {
  const int64_t base = blockIdx.x * d;
  const float* keys = mask + blockIdx.x / rows_per_sample * d;
  const auto masked = [&](int64_t j) {
    return detail::LoadAs(scores, st, base + j) + (1.0f - keys[j]) * -10000.0f;
  };
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < d; j += kThreads) m = fmaxf(m, masked(j));
  m = BlockReduce(m, [](float a, float b) { return fmaxf(a, b); });
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < d; j += kThreads) s += expf(masked(j) - m);
  s = BlockReduce(s, [](float a, float b) { return a + b; });
  for (int64_t j = threadIdx.x; j < d; j += kThreads) probs[base + j] = expf(masked(j) - m) / s;
}

struct DropoutDraw {
  float p, scale;
  uint64_t seed, offset;
  const int64_t* offset_base;
};

// Rows of up to kThreads * kPerThread elements (BERT's keys): each thread
// keeps its elements in registers between the reduction and the write, so
// that dattn is read and the dropout mask drawn once. In place is safe: every
// element is read before the reduction, written after it.
constexpr int kPerThread = 4;

__global__ void DropoutSoftmaxRowsBackward(const float* y, const void* dattn, core::DType at,
                                           void* dx, core::DType xt, int64_t d, DropoutDraw drop) {
  const int64_t base = blockIdx.x * d;
  const uint64_t stream =
      drop.offset + (drop.offset_base ? static_cast<uint64_t>(*drop.offset_base) : 0);
  float g[kPerThread], p[kPerThread], dot = 0.0f;
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t j = threadIdx.x + k * kThreads;
    g[k] = p[k] = 0.0f;
    if (j >= d) continue;
    g[k] = detail::LoadAs(dattn, at, base + j);
    if (drop.p > 0.0f) {
      const bool keep =
          core::PhiloxUniform(drop.seed, stream, static_cast<uint64_t>(base + j)) >= drop.p;
      g[k] = keep ? g[k] * drop.scale : 0.0f;
    }
    p[k] = y[base + j];
    dot += p[k] * g[k];
  }
  dot = BlockReduce(dot, [](float a, float b) { return a + b; });
#pragma unroll
  for (int k = 0; k < kPerThread; ++k) {
    const int64_t j = threadIdx.x + k * kThreads;
    if (j < d) detail::StoreAs(dx, xt, base + j, p[k] * (g[k] - dot));
  }
}

}  // namespace

void SoftmaxForward(const core::Tensor& x, const core::Tensor& y) {
  const int64_t d = x.dim(x.shape().rank() - 1), rows = x.numel() / d;
  MLPERF_CHECK(x.numel() == y.numel());
  SoftmaxRows<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(x.f32(), y.f32(), d);
  CUDA_CHECK_LAUNCH();
}

void SoftmaxBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx) {
  const int64_t d = y.dim(y.shape().rank() - 1), rows = y.numel() / d;
  SoftmaxRowsBackward<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(y.f32(), dy.f32(),
                                                                              dx.f32(), d);
  CUDA_CHECK_LAUNCH();
}

void MaskedSoftmax(const core::Tensor& scores, const core::Tensor& mask,
                   const core::Tensor& probs) {
  MLPERF_CHECK(scores.shape().rank() == 4 && scores.numel() == probs.numel());
  const int64_t b = scores.dim(0), h = scores.dim(1), t = scores.dim(2);
  MLPERF_CHECK(scores.dim(3) == t && mask.numel() == b * t);
  MaskedSoftmaxRows<<<static_cast<unsigned>(b * h * t), kThreads, 0, Stream()>>>(
      scores.data(), scores.dtype(), mask.f32(), probs.f32(), h * t, t);
  CUDA_CHECK_LAUNCH();
}

void DropoutSoftmaxBackward(const AttentionParams& p, const core::Tensor& probs,
                            const core::Tensor& dattn, const core::Tensor& dscores) {
  const int64_t d = probs.dim(probs.shape().rank() - 1), rows = probs.numel() / d;
  MLPERF_CHECK(dattn.numel() == probs.numel() && dscores.numel() == probs.numel());
  MLPERF_CHECK(p.dropout >= 0.0f && p.dropout < 1.0f);
  MLPERF_CHECK_MSG(d <= kThreads * kPerThread, "attention rows of at most 1024 keys");
  const DropoutDraw drop{p.dropout, 1.0f / (1.0f - p.dropout), p.seed, p.offset, p.offset_base};
  DropoutSoftmaxRowsBackward<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      probs.f32(), dattn.data(), dattn.dtype(), dscores.data(), dscores.dtype(), d, drop);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlperf::cuda
