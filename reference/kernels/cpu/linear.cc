#include "reference/kernels/cpu/linear.h"

#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"

namespace mlperf::cpu {

// The pointers are read once, outside the loops, so that they vectorise.
void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(y.numel() == rows * out);
  float* py = y.f32();
  Gemm(false, true, rows, out, in, 1.0f, x.f32(), w.f32(), 0.0f, py);
  if (bias.empty()) return;
  MLPERF_CHECK(bias.numel() == out);
  const float* pb = bias.f32();
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) py[r * out + o] += pb[o];
}

void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias,
                    core::DType round_to) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  if (!dx.empty())
    Gemm(false, false, rows, in, out, 1.0f, dy.f32(), w.f32(), 0.0f, dx.f32(), round_to);
  if (!dw.empty())
    Gemm(true, false, out, in, rows, 1.0f, dy.f32(), x.f32(), 0.0f, dw.f32(), round_to);
  if (dbias.empty()) return;
  // Column sums of dy, a block of columns per iteration: the rows are walked
  // in order (each sum as before, in fp64), along contiguous memory.
  constexpr int64_t kBlock = 256;
  const float* pdy = dy.f32();
  float* pdb = dbias.f32();
#pragma omp parallel for if (WorthParallel(dy.numel()))
  for (int64_t begin = 0; begin < out; begin += kBlock) {
    const int64_t width = begin + kBlock < out ? kBlock : out - begin;
    double sum[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < width; ++o) sum[o] += pdy[r * out + begin + o];
    for (int64_t o = 0; o < width; ++o) pdb[begin + o] = static_cast<float>(sum[o]);
    RoundSpan(round_to, pdb + begin, width);
  }
}

}  // namespace mlperf::cpu
