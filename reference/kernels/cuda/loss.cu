#include <cfloat>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/loss.h"

namespace mlperf::cuda {
namespace {

using core::Tensor;
using detail::BlockMax;
using detail::BlockSum;

constexpr int kThreads = 256;

__device__ float RowLogSumExp(const float* z, int64_t n) {
  float m = -FLT_MAX;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) m = fmaxf(m, z[j]);
  m = BlockMax<kThreads>(m);
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < n; j += kThreads) s += expf(z[j] - m);
  return m + logf(BlockSum<kThreads>(s));
}

// Row r's smoothed cross-entropy into row_loss[r] and its gradient scaled by
// 1/normalizer into dlogits.
__global__ void CrossEntropyRows(float smoothing, float normalizer, const float* logits,
                                 const int32_t* labels, int64_t classes, float* row_loss,
                                 float* dlogits) {
  const int64_t r = blockIdx.x;
  const float* z = logits + r * classes;
  const float lse = RowLogSumExp(z, classes);
  const int32_t label = labels[r];
  const float off = smoothing / classes, on = 1.0f - smoothing + off;
  float total = 0.0f;
  for (int64_t j = threadIdx.x; j < classes; j += kThreads) {
    const float target = j == label ? on : off;
    total += target * (lse - z[j]);
    dlogits[r * classes + j] = (expf(z[j] - lse) - target) / normalizer;
  }
  total = BlockSum<kThreads>(total);
  if (threadIdx.x == 0) row_loss[r] = (label >= 0 && label < classes) ? total : NAN;
}

__global__ void SumWeights(const float* weights, int64_t rows, float* out) {
  float s = 0.0f;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) s += weights[r];
  s = BlockSum<kThreads>(s);
  if (threadIdx.x == 0) *out = s + 1e-5f;
}

__global__ void MaskedLmRows(const float* logits, const int32_t* labels, const float* weights,
                             int64_t vocab, const float* denom, float* row_loss, float* dlogits) {
  const int64_t r = blockIdx.x;
  const float* z = logits + r * vocab;
  const float lse = RowLogSumExp(z, vocab);
  const int32_t label = labels[r];
  const float w = weights[r], scale = w / *denom;
  for (int64_t j = threadIdx.x; j < vocab; j += kThreads)
    dlogits[r * vocab + j] = scale * (expf(z[j] - lse) - (j == label ? 1.0f : 0.0f));
  if (threadIdx.x == 0) row_loss[r] = (label >= 0 && label < vocab) ? w * (lse - z[label]) : NAN;
}

// loss = sum(row_loss) / divisor (divisor read on the device when given).
__global__ void FinishLoss(const float* row_loss, int64_t rows, float normalizer,
                           const float* divisor, float* loss) {
  float s = 0.0f;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) s += row_loss[r];
  s = BlockSum<kThreads>(s);
  if (threadIdx.x == 0) *loss = s / (divisor ? *divisor : normalizer);
}

}  // namespace

void SoftmaxCrossEntropy(float label_smoothing, float normalizer, const Tensor& logits,
                         const Tensor& labels, const Tensor& loss, const Tensor& dlogits) {
  const int64_t classes = logits.dim(logits.shape().rank() - 1);
  const int64_t rows = logits.numel() / classes;
  MLPERF_CHECK(labels.numel() == rows && labels.dtype() == core::DType::kI32);
  MLPERF_CHECK(dlogits.numel() == logits.numel());
  float* row_loss = static_cast<float*>(Scratch(rows * sizeof(float), kScratchReduce));
  CrossEntropyRows<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      label_smoothing, normalizer, logits.f32(), labels.as<int32_t>(), classes, row_loss,
      dlogits.f32());
  CUDA_CHECK_LAUNCH();
  FinishLoss<<<1, kThreads, 0, Stream()>>>(row_loss, rows, normalizer, nullptr, loss.f32());
  CUDA_CHECK_LAUNCH();
}

void MaskedLmLoss(const Tensor& logits, const Tensor& labels, const Tensor& weights,
                  const Tensor& loss, const Tensor& dlogits) {
  const int64_t vocab = logits.dim(logits.shape().rank() - 1), rows = logits.numel() / vocab;
  MLPERF_CHECK(labels.numel() == rows && weights.numel() == rows);
  MLPERF_CHECK(labels.dtype() == core::DType::kI32 && dlogits.numel() == logits.numel());
  // [0]: sum(weights) + 1e-5, then one loss term per row.
  float* scratch = static_cast<float*>(Scratch((rows + 1) * sizeof(float), kScratchReduce));
  SumWeights<<<1, kThreads, 0, Stream()>>>(weights.f32(), rows, scratch);
  CUDA_CHECK_LAUNCH();
  MaskedLmRows<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(
      logits.f32(), labels.as<int32_t>(), weights.f32(), vocab, scratch, scratch + 1,
      dlogits.f32());
  CUDA_CHECK_LAUNCH();
  FinishLoss<<<1, kThreads, 0, Stream()>>>(scratch + 1, rows, 1.0f, scratch, loss.f32());
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlperf::cuda
