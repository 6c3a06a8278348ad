#include <cfloat>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
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

}  // namespace mlperf::cuda
