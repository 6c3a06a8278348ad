#include "reference/kernels/cpu/linear.h"

#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {

void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(y.numel() == rows * out);
  Gemm(false, true, rows, out, in, 1.0f, x.f32(), w.f32(), 0.0f, y.f32());
  if (bias.empty()) return;
  MLPERF_CHECK(bias.numel() == out);
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) y.f32()[r * out + o] += bias.f32()[o];
}

void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  if (!dx.empty()) Gemm(false, false, rows, in, out, 1.0f, dy.f32(), w.f32(), 0.0f, dx.f32());
  Gemm(true, false, out, in, rows, 1.0f, dy.f32(), x.f32(), 0.0f, dw.f32());
  if (dbias.empty()) return;
#pragma omp parallel for if (WorthParallel(dy.numel()))
  for (int64_t o = 0; o < out; ++o) {
    double sum = 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += dy.f32()[r * out + o];
    dbias.f32()[o] = static_cast<float>(sum);
  }
}

}  // namespace mlperf::cpu
