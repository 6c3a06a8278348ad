#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/gemm_epilogue.h"
#include "reference/kernels/cuda/linear.h"

namespace mlperf::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kRowsPerChunk = 256;

__global__ void AddBias(float* y, const float* bias, int64_t rows, int64_t out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * out;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] += bias[i % out];
}

// Bias gradient in two passes, in a fixed order: each block sums a chunk of
// rows for kThreads columns (coalesced reads), then one thread per column
// sums the chunks. Enough blocks to fill the GPU even with few columns.
__global__ void BiasGradientChunks(const float* dy, float* partial, int64_t rows, int64_t out) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (o >= out) return;
  const int64_t begin = blockIdx.y * kRowsPerChunk;
  const int64_t end = begin + kRowsPerChunk < rows ? begin + kRowsPerChunk : rows;
  float s = 0.0f;
  for (int64_t r = begin; r < end; ++r) s += dy[r * out + o];
  partial[blockIdx.y * out + o] = s;
}

__global__ void SumChunks(const float* partial, float* dbias, int64_t chunks, int64_t out) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= out) return;
  float s = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c * out + o];
  dbias[o] = s;
}

void BiasGradient(const float* dy, float* dbias, int64_t rows, int64_t out) {
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  MLPERF_CHECK(chunks <= 65535);
  float* partial = static_cast<float*>(
      Scratch(static_cast<size_t>(chunks * out) * sizeof(float), kScratchReduce));
  const dim3 grid(static_cast<unsigned>((out + kThreads - 1) / kThreads),
                  static_cast<unsigned>(chunks));
  BiasGradientChunks<<<grid, kThreads, 0, Stream()>>>(dy, partial, rows, out);
  CUDA_CHECK_LAUNCH();
  SumChunks<<<Blocks(out), kThreads, 0, Stream()>>>(partial, dbias, chunks, out);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(y.numel() == rows * out);
  if (!bias.empty() && LinearForwardWithBias(x.f32(), w.f32(), bias.f32(), y.f32(), rows, in, out))
    return;
  Gemm(false, true, rows, out, in, 1.0f, x.f32(), w.f32(), 0.0f, y.f32());
  if (bias.empty()) return;
  AddBias<<<Blocks(rows * out), kThreads, 0, Stream()>>>(y.f32(), bias.f32(), rows, out);
  CUDA_CHECK_LAUNCH();
}

void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  if (!dx.empty()) Gemm(false, false, rows, in, out, 1.0f, dy.f32(), w.f32(), 0.0f, dx.f32());
  if (!dbias.empty() &&
      WeightAndBiasGradients(x.f32(), dy.f32(), dw.f32(), dbias.f32(), rows, in, out))
    return;
  Gemm(true, false, out, in, rows, 1.0f, dy.f32(), x.f32(), 0.0f, dw.f32());
  if (!dbias.empty()) BiasGradient(dy.f32(), dbias.f32(), rows, out);
}

}  // namespace mlperf::cuda
