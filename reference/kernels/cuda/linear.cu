#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/gemm_epilogue.h"
#include "reference/kernels/cuda/linear.h"

namespace mlperf::cuda {
namespace {

using core::DType;

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
// dy in fp32, bf16 or fp16.
__global__ void BiasGradientChunks(const void* dy, DType t, float* partial, int64_t rows,
                                   int64_t out) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (o >= out) return;
  const int64_t begin = blockIdx.y * kRowsPerChunk;
  const int64_t end = begin + kRowsPerChunk < rows ? begin + kRowsPerChunk : rows;
  float s = 0.0f;
  for (int64_t r = begin; r < end; ++r) s += detail::LoadAs(dy, t, r * out + o);
  partial[blockIdx.y * out + o] = s;
}

__global__ void SumChunks(const float* partial, float* dbias, int64_t chunks, int64_t out) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (o >= out) return;
  float s = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) s += partial[c * out + o];
  dbias[o] = s;
}

void BiasGradient(const core::Tensor& dy, float* dbias, int64_t rows, int64_t out) {
  const int64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  MLPERF_CHECK(chunks <= 65535);
  float* partial = static_cast<float*>(
      Scratch(static_cast<size_t>(chunks * out) * sizeof(float), kScratchReduce));
  const dim3 grid(static_cast<unsigned>((out + kThreads - 1) / kThreads),
                  static_cast<unsigned>(chunks));
  BiasGradientChunks<<<grid, kThreads, 0, Stream()>>>(dy.data(), dy.dtype(), partial, rows, out);
  CUDA_CHECK_LAUNCH();
  SumChunks<<<Blocks(out), kThreads, 0, Stream()>>>(partial, dbias, chunks, out);
  CUDA_CHECK_LAUNCH();
}

// y = op(a) op(b) in fp32 from operands of `t` (fp32: the pedantic cuBLAS
// path; bf16/fp16: the tensor cores, fp32 accumulation).
void GemmTo32(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const core::Tensor& a,
              const core::Tensor& b, float* c) {
  MLPERF_CHECK(a.dtype() == b.dtype());
  if (a.dtype() == DType::kF32)
    return Gemm(trans_a, trans_b, m, n, k, 1.0f, a.f32(), b.f32(), 0.0f, c);
  GemmStridedBatchedEx(trans_a, trans_b, m, n, k, 1.0f, a.data(), 0, b.data(), 0, 0.0f, c, 0, 1,
                       a.dtype(), DType::kF32);
}

}  // namespace

// x, w (and dy) in fp32, or in bf16/fp16 (ops:: under a reduced
// precision); bias, y and the gradients always fp32. The cuBLASLt epilogues
// serve the fp32 case.
void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(y.numel() == rows * out && y.dtype() == DType::kF32);
  const bool fp32 = x.dtype() == DType::kF32;
  if (fp32 && !bias.empty() &&
      LinearForwardWithBias(x.f32(), w.f32(), bias.f32(), y.f32(), rows, in, out))
    return;
  GemmTo32(false, true, rows, out, in, x, w, y.f32());
  if (bias.empty()) return;
  AddBias<<<Blocks(rows * out), kThreads, 0, Stream()>>>(y.f32(), bias.f32(), rows, out);
  CUDA_CHECK_LAUNCH();
}

void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  const bool fp32 = x.dtype() == DType::kF32;
  if (!dx.empty()) GemmTo32(false, false, rows, in, out, dy, w, dx.f32());
  if (fp32 && !dbias.empty() &&
      WeightAndBiasGradients(x.f32(), dy.f32(), dw.f32(), dbias.f32(), rows, in, out))
    return;
  GemmTo32(true, false, out, in, rows, dy, x, dw.f32());
  if (!dbias.empty()) BiasGradient(dy, dbias.f32(), rows, out);
}

}  // namespace mlperf::cuda
