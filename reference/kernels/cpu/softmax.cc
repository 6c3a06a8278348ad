#include "reference/kernels/ops/softmax.h"

#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/vec_math.h"

namespace mlperf::cpu {

// The pointers are read once, outside the loops, so that they vectorise.
void SoftmaxForward(const core::Tensor& x, const core::Tensor& y) {
  const int64_t d = x.dim(x.shape().rank() - 1), rows = x.numel() / d;
  MLPERF_CHECK(x.numel() == y.numel());
  const float* px = x.f32();
  float* py = y.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = px + r * d;
    float* out = py + r * d;
    float max = in[0];
    for (int64_t j = 1; j < d; ++j) max = max < in[j] ? in[j] : max;
    // exp once per element, kept in the output; the sum in fp64.
    for (int64_t j = 0; j < d; ++j) out[j] = ExpF(in[j] - max);
    double sum = 0.0;
    for (int64_t j = 0; j < d; ++j) sum += out[j];
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < d; ++j) out[j] *= inv;
  }
}

void SoftmaxBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx) {
  const int64_t d = y.dim(y.shape().rank() - 1), rows = y.numel() / d;
  MLPERF_CHECK(y.numel() == dy.numel() && dy.numel() == dx.numel());
  const float* py = y.f32();
  const float* pdy = dy.f32();
  float* pdx = dx.f32();
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = py + r * d;
    const float* gr = pdy + r * d;
    double dot = 0.0;
    for (int64_t j = 0; j < d; ++j) dot += static_cast<double>(yr[j]) * gr[j];
    const float dot32 = static_cast<float>(dot);
    for (int64_t j = 0; j < d; ++j) pdx[r * d + j] = yr[j] * (gr[j] - dot32);
  }
}

MLPERF_REGISTER_KERNEL(SoftmaxForward, Cpu, SoftmaxForward);
MLPERF_REGISTER_KERNEL(SoftmaxBackward, Cpu, SoftmaxBackward);

}  // namespace mlperf::cpu
