#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/linear.h"

namespace mlperf::cuda {
namespace {

__global__ void AddBias(float* y, const float* bias, int64_t rows, int64_t out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * out;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] += bias[i % out];
}

// One thread per output feature sums its column; fp32 accumulation.
__global__ void BiasGradient(const float* dy, float* dbias, int64_t rows, int64_t out) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= out) return;
  float s = 0.0f;
  for (int64_t r = 0; r < rows; ++r) s += dy[r * out + o];
  dbias[o] = s;
}

}  // namespace

void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(y.numel() == rows * out);
  Gemm(false, true, rows, out, in, 1.0f, x.f32(), w.f32(), 0.0f, y.f32());
  if (bias.empty()) return;
  AddBias<<<Blocks(rows * out), 256, 0, Stream()>>>(y.f32(), bias.f32(), rows, out);
  CUDA_CHECK_LAUNCH();
}

void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  if (!dx.empty()) Gemm(false, false, rows, in, out, 1.0f, dy.f32(), w.f32(), 0.0f, dx.f32());
  Gemm(true, false, out, in, rows, 1.0f, dy.f32(), x.f32(), 0.0f, dw.f32());
  if (dbias.empty()) return;
  BiasGradient<<<Blocks(out), 256, 0, Stream()>>>(dy.f32(), dbias.f32(), rows, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlperf::cuda
