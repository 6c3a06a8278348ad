#include "reference/kernels/cpu/softmax.h"

#include <cmath>

#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {

void SoftmaxForward(const core::Tensor& x, const core::Tensor& y) {
  const int64_t d = x.dim(x.shape().rank() - 1), rows = x.numel() / d;
  MLPERF_CHECK(x.numel() == y.numel());
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x.f32() + r * d;
    float* out = y.f32() + r * d;
    float max = in[0];
    for (int64_t j = 1; j < d; ++j) max = std::fmax(max, in[j]);
    double sum = 0.0;
    for (int64_t j = 0; j < d; ++j) sum += std::exp(static_cast<double>(in[j]) - max);
    for (int64_t j = 0; j < d; ++j)
      out[j] = static_cast<float>(std::exp(static_cast<double>(in[j]) - max) / sum);
  }
}

void SoftmaxBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx) {
  const int64_t d = y.dim(y.shape().rank() - 1), rows = y.numel() / d;
  MLPERF_CHECK(y.numel() == dy.numel() && dy.numel() == dx.numel());
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* yr = y.f32() + r * d;
    const float* gr = dy.f32() + r * d;
    double dot = 0.0;
    for (int64_t j = 0; j < d; ++j) dot += static_cast<double>(yr[j]) * gr[j];
    for (int64_t j = 0; j < d; ++j) dx.f32()[r * d + j] = static_cast<float>(yr[j] * (gr[j] - dot));
  }
}

}  // namespace mlperf::cpu
