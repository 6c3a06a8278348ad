#include <algorithm>

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

// y = products + bias, stored in y's type (a reduced one rounded once,
// here); products fp32, bias of y's type, y may be the products.
__global__ void AddBias(const float* products, const void* bias, void* y, DType t, int64_t rows,
                        int64_t out) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * out;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    detail::StoreAs(y, t, i, products[i] + detail::LoadAs(bias, t, i % out));
}

// Bias gradient in two passes, in a fixed order: each block sums a chunk of
// rows for kThreads columns (coalesced reads), then one thread per column
// sums the chunks. Enough blocks to fill the GPU even with few columns.
// dy in fp32, bf16 or fp16.
__global__ void BiasGradientChunks(const void* dy, DType t, float* partial, int64_t rows,
                                   int64_t out, int64_t rows_per_chunk) {
  const int64_t o = blockIdx.x * static_cast<int64_t>(kThreads) + threadIdx.x;
  if (o >= out) return;
  const int64_t begin = blockIdx.y * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk < rows ? begin + rows_per_chunk : rows;
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

}  // namespace

void BiasGradient(const core::Tensor& dy, float* dbias, int64_t rows, int64_t out) {
  // At most 65535 chunks (the grid's y limit): longer chunks for more rows.
  const int64_t per = std::max<int64_t>(kRowsPerChunk, (rows + 65534) / 65535);
  const int64_t chunks = (rows + per - 1) / per;
  float* partial = static_cast<float*>(
      Scratch(static_cast<size_t>(chunks * out) * sizeof(float), kScratchReduce));
  const dim3 grid(static_cast<unsigned>((out + kThreads - 1) / kThreads),
                  static_cast<unsigned>(chunks));
  BiasGradientChunks<<<grid, kThreads, 0, Stream()>>>(dy.data(), dy.dtype(), partial, rows, out,
                                                      per);
  CUDA_CHECK_LAUNCH();
  SumChunks<<<Blocks(out), kThreads, 0, Stream()>>>(partial, dbias, chunks, out);
  CUDA_CHECK_LAUNCH();
}

namespace {

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
// precision); y and dx in fp32 or in the operands' type, the bias in y's;
// dw and dbias fp32. The cuBLASLt epilogues serve each case they can.
void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  const DType yt = y.dtype();
  MLPERF_CHECK(y.numel() == rows * out && x.dtype() == w.dtype());
  MLPERF_CHECK(yt == DType::kF32 || yt == x.dtype());
  MLPERF_CHECK(bias.empty() || bias.dtype() == yt);
  if (!bias.empty() && LinearForwardWithBias(x.data(), w.data(), x.dtype(), bias.data(), y.data(),
                                             yt, rows, in, out))
    return;
  if (bias.empty() && yt != DType::kF32)
    return GemmStridedBatchedEx(false, true, rows, out, in, 1.0f, x.data(), 0, w.data(), 0, 0.0f,
                                y.data(), 0, 1, x.dtype(), yt);
  // A reduced y takes the fp32 products from scratch and is rounded once,
  // with the bias added.
  float* products = yt == DType::kF32
                        ? y.f32()
                        : static_cast<float*>(Scratch(
                              static_cast<size_t>(rows * out) * sizeof(float), kScratchReduce));
  GemmTo32(false, true, rows, out, in, x, w, products);
  if (bias.empty()) return;
  AddBias<<<Blocks(rows * out), kThreads, 0, Stream()>>>(products, bias.data(), y.data(), yt, rows,
                                                         out);
  CUDA_CHECK_LAUNCH();
}

void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(x.dtype() == w.dtype() && dy.dtype() == w.dtype());
  MLPERF_CHECK((dw.empty() || dw.dtype() == DType::kF32) &&
               (dbias.empty() || dbias.dtype() == DType::kF32));
  if (!dx.empty() && dx.dtype() == DType::kF32) {
    GemmTo32(false, false, rows, in, out, dy, w, dx.f32());
  } else if (!dx.empty()) {
    MLPERF_CHECK(dx.dtype() == dy.dtype());
    GemmStridedBatchedEx(false, false, rows, in, out, 1.0f, dy.data(), 0, w.data(), 0, 0.0f,
                         dx.data(), 0, 1, dy.dtype(), dx.dtype());
  }
  if (dw.empty()) {  // a frozen weight
    if (!dbias.empty()) BiasGradient(dy, dbias.f32(), rows, out);
    return;
  }
  if (!dbias.empty() &&
      WeightAndBiasGradients(x.data(), dy.data(), x.dtype(), dw.f32(), dbias.f32(), rows, in, out))
    return;
  GemmTo32(true, false, out, in, rows, dy, x, dw.f32());
  if (!dbias.empty()) BiasGradient(dy, dbias.f32(), rows, out);
}

}  // namespace mlperf::cuda
