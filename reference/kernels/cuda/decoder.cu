// The decoder LLMs' pieces on a CUDA device (kernels/ops/decoder.h), the
// twins of cpu/decoder.cc. fp32; per-row statistics in fp32 by block sums,
// the weight gradient as deterministic column sums over row chunks.
#include <algorithm>
#include <cfloat>

#include "base/check.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/ops/decoder.h"

namespace mlperf::cuda {
namespace {

using core::Tensor;
using detail::BlockSum;

constexpr int kThreads = 256;

int64_t Features(const Tensor& x) { return x.dim(x.shape().rank() - 1); }

__device__ float Sigmoid(float g) { return 1.0f / (1.0f + expf(-g)); }

__global__ void RmsNormForwardKernel(float epsilon, const float* x, const float* w, int64_t n,
                                     float* y, float* inv_rms) {
  const float* xr = x + blockIdx.x * n;
  float squares = 0.0f;
  for (int64_t f = threadIdx.x; f < n; f += kThreads) squares += xr[f] * xr[f];
  const float inv = rsqrtf(BlockSum<kThreads>(squares) / n + epsilon);
  if (threadIdx.x == 0) inv_rms[blockIdx.x] = inv;
  float* yr = y + blockIdx.x * n;
  for (int64_t f = threadIdx.x; f < n; f += kThreads) yr[f] = xr[f] * inv * w[f];
}

__global__ void RmsNormBackwardKernel(const float* x, const float* dy, const float* w,
                                      const float* inv_rms, int64_t n, float* dx) {
  const float *xr = x + blockIdx.x * n, *dyr = dy + blockIdx.x * n;
  float dot = 0.0f;
  for (int64_t f = threadIdx.x; f < n; f += kThreads) dot += w[f] * dyr[f] * xr[f];
  const float inv = inv_rms[blockIdx.x];
  const float k = BlockSum<kThreads>(dot) / n * inv * inv * inv;
  float* dxr = dx + blockIdx.x * n;
  for (int64_t f = threadIdx.x; f < n; f += kThreads) dxr[f] = inv * w[f] * dyr[f] - k * xr[f];
}

// Partial column sums of dy x r over a chunk of rows, then the chunks added
// in order (deterministic).
__global__ void RmsNormWeightPartials(const float* x, const float* dy, const float* inv_rms,
                                      int64_t rows, int64_t n, int64_t rows_per_chunk,
                                      float* partial) {
  const int64_t f = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (f >= n) return;
  const int64_t first = blockIdx.y * rows_per_chunk;
  const int64_t last = min(rows, first + rows_per_chunk);
  float sum = 0.0f;
  for (int64_t r = first; r < last; ++r) sum += dy[r * n + f] * x[r * n + f] * inv_rms[r];
  partial[blockIdx.y * n + f] = sum;
}

__global__ void SumChunks(const float* partial, int64_t chunks, int64_t n, float* out) {
  const int64_t f = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (f >= n) return;
  float sum = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) sum += partial[c * n + f];
  out[f] = sum;
}

// A block per row: the row's max and sum of exponentials, its gradient, and
// its loss into row_loss; then one block adds the rows in order.
__global__ void TokenCrossEntropyRows(float normalizer, const float* z, const int32_t* labels,
                                      int64_t vocab, float* dz, float* row_loss) {
  const float* zr = z + blockIdx.x * vocab;
  float* dr = dz + blockIdx.x * vocab;
  if (labels[blockIdx.x] == ops::kIgnoreLabel) {  // the whole block returns together
    for (int64_t j = threadIdx.x; j < vocab; j += kThreads) dr[j] = 0.0f;
    if (threadIdx.x == 0) row_loss[blockIdx.x] = 0.0f;
    return;
  }
  float max = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) max = fmaxf(max, zr[j]);
  max = detail::BlockMax<kThreads>(max);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads) sum += expf(zr[j] - max);
  sum = BlockSum<kThreads>(sum);
  const float scale = 1.0f / (sum * normalizer);
  const int32_t label = labels[blockIdx.x];
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads)
    dr[j] = expf(zr[j] - max) * scale - (j == label ? 1.0f / normalizer : 0.0f);
  if (threadIdx.x == 0) row_loss[blockIdx.x] = logf(sum) + max - zr[label];
}

__global__ void SumRows(const float* row_loss, int64_t rows, float normalizer, float* loss) {
  double total = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) total += row_loss[r];
  const float sum = BlockSum<kThreads>(static_cast<float>(total));
  if (threadIdx.x == 0) loss[0] = sum / normalizer;
}

// Each column walks every row in order (deterministic sums of repeated ids).
__global__ void VocabShardGradColumns(int64_t first, const int32_t* ids, const float* dy,
                                      int64_t rows, int64_t entries, int64_t width, float* dtable) {
  const int64_t f = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (f >= width) return;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t row = ids[r] - first;
    if (row >= 0 && row < entries) dtable[row * width + f] += dy[r * width + f];
  }
}

__global__ void RowLogSumExpRows(const float* z, int64_t n, float* lse) {
  const float* zr = z + blockIdx.x * n;
  float max = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) max = fmaxf(max, zr[j]);
  max = detail::BlockMax<kThreads>(max);
  float sum = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) sum += expf(zr[j] - max);
  sum = BlockSum<kThreads>(sum);
  if (threadIdx.x == 0) lse[blockIdx.x] = max + logf(sum);
}

__global__ void ShardedCrossEntropyRows(float normalizer, int64_t first, bool add_lse,
                                        const float* z, const int32_t* labels, const float* lse,
                                        int64_t n, float* dz, float* row_loss) {
  const float* zr = z + blockIdx.x * n;
  float* dr = dz + blockIdx.x * n;
  if (labels[blockIdx.x] == ops::kIgnoreLabel) {
    for (int64_t j = threadIdx.x; j < n; j += kThreads) dr[j] = 0.0f;
    if (threadIdx.x == 0) row_loss[blockIdx.x] = 0.0f;
    return;
  }
  const float l = lse[blockIdx.x];
  const int64_t column = labels[blockIdx.x] - first;
  for (int64_t j = threadIdx.x; j < n; j += kThreads)
    dr[j] = expf(zr[j] - l) / normalizer - (j == column ? 1.0f / normalizer : 0.0f);
  if (threadIdx.x == 0)
    row_loss[blockIdx.x] = (add_lse ? l : 0.0f) - (column >= 0 && column < n ? zr[column] : 0.0f);
}

template <typename F>
__global__ void Each(long long n, F f) {
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x)
    f(i);
}

template <typename F>
void Launch(long long n, F f) {
  if (n == 0) return;
  Each<<<Blocks(n), kThreads, 0, Stream()>>>(n, f);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void RmsNormForward(float epsilon, const Tensor& x, const Tensor& weight, const Tensor& y,
                    const Tensor& inv_rms) {
  const int64_t n = Features(x), rows = x.numel() / n;
  MLPERF_CHECK(weight.numel() == n && y.numel() == x.numel() && inv_rms.numel() == rows);
  if (rows == 0) return;
  RmsNormForwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      epsilon, x.f32(), weight.f32(), n, y.f32(), inv_rms.f32());
  CUDA_CHECK_LAUNCH();
}

void RmsNormBackward(const Tensor& x, const Tensor& dy, const Tensor& weight, const Tensor& inv_rms,
                     const Tensor& dx, const Tensor& dweight) {
  const int64_t n = Features(x), rows = x.numel() / n;
  MLPERF_CHECK(dy.numel() == x.numel() && dx.numel() == x.numel() && dweight.numel() == n);
  MLPERF_CHECK(dx.data() != dy.data());
  if (rows == 0) return;
  RmsNormBackwardKernel<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      x.f32(), dy.f32(), weight.f32(), inv_rms.f32(), n, dx.f32());
  CUDA_CHECK_LAUNCH();
  const int64_t chunks = std::min<int64_t>(rows, 128);
  const int64_t rows_per_chunk = (rows + chunks - 1) / chunks;
  float* partial = static_cast<float*>(Scratch(chunks * n * sizeof(float), kScratchReduce));
  const dim3 grid(static_cast<unsigned>((n + 255) / 256), static_cast<unsigned>(chunks));
  RmsNormWeightPartials<<<grid, 256, 0, Stream()>>>(x.f32(), dy.f32(), inv_rms.f32(), rows, n,
                                                    rows_per_chunk, partial);
  CUDA_CHECK_LAUNCH();
  SumChunks<<<Blocks(n), 256, 0, Stream()>>>(partial, chunks, n, dweight.f32());
  CUDA_CHECK_LAUNCH();
}

void RotaryEmbedding(bool inverse, const Tensor& x, const Tensor& cos, const Tensor& sin,
                     const Tensor& y) {
  const int64_t t = x.dim(2), d = x.dim(3), half = d / 2;
  MLPERF_CHECK(d % 2 == 0 && y.numel() == x.numel() && cos.numel() >= t * half &&
               sin.numel() == cos.numel());
  const float *px = x.f32(), *pc = cos.f32(), *ps = sin.f32();
  float* py = y.f32();
  const float sign = inverse ? -1.0f : 1.0f;
  // One thread per pair (i, i + half): in place is safe.
  Launch(x.numel() / 2, [=] __device__(long long k) {
    const long long vector = k / half, i = k % half;
    const long long position = vector % t;
    const float c = pc[position * half + i], s = sign * ps[position * half + i];
    const float a = px[vector * d + i], b = px[vector * d + i + half];
    py[vector * d + i] = a * c - b * s;
    py[vector * d + i + half] = b * c + a * s;
  });
}

void SwiGluForward(const Tensor& gate, const Tensor& up, const Tensor& y) {
  MLPERF_CHECK(gate.numel() == up.numel() && up.numel() == y.numel());
  const float *g = gate.f32(), *u = up.f32();
  float* out = y.f32();
  Launch(y.numel(), [=] __device__(long long i) { out[i] = g[i] * Sigmoid(g[i]) * u[i]; });
}

void SwiGluBackward(const Tensor& gate, const Tensor& up, const Tensor& dy, const Tensor& dgate,
                    const Tensor& dup) {
  const int64_t n = dy.numel();
  MLPERF_CHECK(gate.numel() == n && up.numel() == n && dgate.numel() == n && dup.numel() == n);
  const float *g = gate.f32(), *u = up.f32(), *pdy = dy.f32();
  float *pdg = dgate.f32(), *pdu = dup.f32();
  Launch(n, [=] __device__(long long i) {
    const float s = Sigmoid(g[i]), grad = pdy[i];
    pdg[i] = grad * u[i] * s * (1.0f + g[i] * (1.0f - s));
    pdu[i] = grad * g[i] * s;
  });
}

void RepeatHeads(const Tensor& x, const Tensor& y) {
  const int64_t b = x.dim(0), kv = x.dim(1), block = x.dim(2) * x.dim(3), h = y.dim(1);
  MLPERF_CHECK(y.dim(0) == b && h % kv == 0 && y.numel() == b * h * block);
  const float* px = x.f32();
  float* py = y.f32();
  const int64_t group = h / kv;
  Launch(y.numel(), [=] __device__(long long i) {
    const long long head = i / block, j = i % block;
    py[i] = px[((head / h) * kv + (head % h) / group) * block + j];
  });
}

void SumHeadGroups(const Tensor& dy, const Tensor& dx) {
  const int64_t b = dx.dim(0), kv = dx.dim(1), block = dx.dim(2) * dx.dim(3), h = dy.dim(1);
  MLPERF_CHECK(dy.dim(0) == b && h % kv == 0 && dy.numel() == b * h * block);
  const float* pdy = dy.f32();
  float* pdx = dx.f32();
  const int64_t group = h / kv;
  Launch(dx.numel(), [=] __device__(long long i) {
    const long long head = i / block, j = i % block;
    const float* first = pdy + ((head / kv) * h + (head % kv) * group) * block + j;
    float sum = 0.0f;
    for (int64_t g = 0; g < group; ++g) sum += first[g * block];
    pdx[i] = sum;
  });
}

void TokenCrossEntropy(float normalizer, const Tensor& logits, const Tensor& labels,
                       const Tensor& loss, const Tensor& dlogits) {
  const int64_t vocab = Features(logits), rows = logits.numel() / vocab;
  MLPERF_CHECK(labels.numel() == rows && labels.dtype() == core::DType::kI32 &&
               dlogits.numel() == logits.numel() && normalizer > 0.0f);
  if (rows == 0) return;
  float* row_loss = static_cast<float*>(Scratch(rows * sizeof(float), kScratchReduce));
  TokenCrossEntropyRows<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      normalizer, logits.f32(), labels.as<int32_t>(), vocab, dlogits.f32(), row_loss);
  CUDA_CHECK_LAUNCH();
  SumRows<<<1, kThreads, 0, Stream()>>>(row_loss, rows, normalizer, loss.f32());
  CUDA_CHECK_LAUNCH();
}

void VocabShardEmbedding(int64_t first, const Tensor& ids, const Tensor& table, const Tensor& y) {
  const int64_t rows = ids.numel(), entries = table.dim(0), width = table.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && y.numel() == rows * width);
  const int32_t* id = ids.as<int32_t>();
  const float* t = table.f32();
  float* out = y.f32();
  Launch(y.numel(), [=] __device__(long long i) {
    const long long row = id[i / width] - first;
    out[i] = row >= 0 && row < entries ? t[row * width + i % width] : 0.0f;
  });
}

void VocabShardEmbeddingBackward(int64_t first, const Tensor& ids, const Tensor& dy,
                                 const Tensor& dtable, bool accumulate) {
  const int64_t rows = ids.numel(), entries = dtable.dim(0), width = dtable.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && dy.numel() == rows * width);
  if (!accumulate) CUDA_CHECK(cudaMemsetAsync(dtable.data(), 0, dtable.bytes(), Stream()));
  if (width == 0) return;
  VocabShardGradColumns<<<Blocks(width), kThreads, 0, Stream()>>>(
      first, ids.as<int32_t>(), dy.f32(), rows, entries, width, dtable.f32());
  CUDA_CHECK_LAUNCH();
}

void RowLogSumExp(const Tensor& logits, const Tensor& lse) {
  const int64_t n = Features(logits), rows = logits.numel() / n;
  MLPERF_CHECK(lse.numel() == rows);
  if (rows == 0) return;
  RowLogSumExpRows<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(logits.f32(), n,
                                                                           lse.f32());
  CUDA_CHECK_LAUNCH();
}

void CombineLogSumExp(const Tensor& gathered, const Tensor& lse) {
  const int64_t rows = lse.numel(), ranks = gathered.numel() / rows;
  MLPERF_CHECK(gathered.numel() == ranks * rows);
  const float* g = gathered.f32();
  float* out = lse.f32();
  Launch(rows, [=] __device__(long long r) {
    float max = g[r];
    for (int64_t k = 1; k < ranks; ++k) max = fmaxf(max, g[k * rows + r]);
    double sum = 0.0;
    for (int64_t k = 0; k < ranks; ++k) sum += exp(static_cast<double>(g[k * rows + r]) - max);
    out[r] = static_cast<float>(max + log(sum));
  });
}

void ShardedTokenCrossEntropy(float normalizer, int64_t first, bool add_lse, const Tensor& logits,
                              const Tensor& labels, const Tensor& lse, const Tensor& loss,
                              const Tensor& dlogits) {
  const int64_t n = Features(logits), rows = logits.numel() / n;
  MLPERF_CHECK(labels.numel() == rows && labels.dtype() == core::DType::kI32 &&
               lse.numel() == rows && dlogits.numel() == logits.numel() && normalizer > 0.0f);
  if (rows == 0) return;
  float* row_loss = static_cast<float*>(Scratch(rows * sizeof(float), kScratchReduce));
  ShardedCrossEntropyRows<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      normalizer, first, add_lse, logits.f32(), labels.as<int32_t>(), lse.f32(), n, dlogits.f32(),
      row_loss);
  CUDA_CHECK_LAUNCH();
  SumRows<<<1, kThreads, 0, Stream()>>>(row_loss, rows, normalizer, loss.f32());
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(TokenCrossEntropy, Cuda, TokenCrossEntropy);
MLPERF_REGISTER_KERNEL(VocabShardEmbedding, Cuda, VocabShardEmbedding);
MLPERF_REGISTER_KERNEL(VocabShardEmbeddingBackward, Cuda, VocabShardEmbeddingBackward);
MLPERF_REGISTER_KERNEL(RowLogSumExp, Cuda, RowLogSumExp);
MLPERF_REGISTER_KERNEL(CombineLogSumExp, Cuda, CombineLogSumExp);
MLPERF_REGISTER_KERNEL(ShardedTokenCrossEntropy, Cuda, ShardedTokenCrossEntropy);
MLPERF_REGISTER_KERNEL(RmsNormForward, Cuda, RmsNormForward);
MLPERF_REGISTER_KERNEL(RmsNormBackward, Cuda, RmsNormBackward);
MLPERF_REGISTER_KERNEL(RotaryEmbedding, Cuda, RotaryEmbedding);
MLPERF_REGISTER_KERNEL(SwiGluForward, Cuda, SwiGluForward);
MLPERF_REGISTER_KERNEL(SwiGluBackward, Cuda, SwiGluBackward);
MLPERF_REGISTER_KERNEL(RepeatHeads, Cuda, RepeatHeads);
MLPERF_REGISTER_KERNEL(SumHeadGroups, Cuda, SumHeadGroups);

}  // namespace mlperf::cuda
