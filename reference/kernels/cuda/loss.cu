#include <cfloat>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/ops/loss.h"

namespace mlperf::cuda {
namespace {

using core::Tensor;
using detail::ActivationView;
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

// 3D U-Net Dice + CE, in four passes like the CPU twin: per voxel the softmax
// probabilities and the CE term; per (sample, class) the Dice sums; the
// scalar loss; then per voxel the gradient through the softmax Jacobian.
// a views logits, probabilities and their gradient alike ([n, c, s] or
// channels-last [n, s, c]).
__global__ void DiceVoxelSoftmax(const float* logits, const int32_t* labels, int64_t n,
                                 ActivationView a, float* prob, float* voxel_ce) {
  const int64_t c = a.channels, s = a.spatial;
  const int64_t v = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (v >= n * s) return;
  const int64_t i = v / s, q = v % s;
  float m = -FLT_MAX;
  for (int64_t j = 0; j < c; ++j) m = fmaxf(m, logits[a.Offset(i, j, q)]);
  float sum = 0.0f;
  for (int64_t j = 0; j < c; ++j) sum += expf(logits[a.Offset(i, j, q)] - m);
  const float lse = m + logf(sum);
  const int32_t label = labels[v];
  voxel_ce[v] = (label >= 0 && label < c) ? lse - logits[a.Offset(i, label, q)] : NAN;
  for (int64_t j = 0; j < c; ++j) prob[a.Offset(i, j, q)] = expf(logits[a.Offset(i, j, q)] - lse);
}

// One block per (sample i, class j >= 1): intersection and union sums.
__global__ void DiceSums(const float* prob, const int32_t* labels, ActivationView a, float* inter,
                         float* uni) {
  const int64_t c = a.channels, s = a.spatial;
  const int64_t i = blockIdx.x, j = 1 + blockIdx.y;
  float pt = 0.0f, p_plus_t = 0.0f;
  for (int64_t q = threadIdx.x; q < s; q += kThreads) {
    const float p = prob[a.Offset(i, j, q)];
    const float t = labels[i * s + q] == j ? 1.0f : 0.0f;
    pt += p * t;
    p_plus_t += p + t;
  }
  pt = BlockSum<kThreads>(pt);
  p_plus_t = BlockSum<kThreads>(p_plus_t);
  if (threadIdx.x == 0) {
    inter[i * c + j] = pt;
    uni[i * c + j] = p_plus_t;
  }
}

constexpr float kDiceSmooth = 1e-6f;

__global__ void DiceLoss(const float* voxel_ce, int64_t voxels, const float* inter,
                         const float* uni, int64_t n, int64_t c, float* loss) {
  float ce = 0.0f;
  for (int64_t v = threadIdx.x; v < voxels; v += kThreads) ce += voxel_ce[v];
  ce = BlockSum<kThreads>(ce);
  float dice = 0.0f;
  for (int64_t k = threadIdx.x; k < n * (c - 1); k += kThreads) {
    const int64_t i = k / (c - 1), j = 1 + k % (c - 1);
    dice += (2.0f * inter[i * c + j] + kDiceSmooth) / (uni[i * c + j] + kDiceSmooth);
  }
  dice = BlockSum<kThreads>(dice);
  if (threadIdx.x == 0)
    *loss = 0.5f * (1.0f - dice / static_cast<float>(n * (c - 1))) +
            0.5f * ce / static_cast<float>(voxels);
}

__global__ void DiceGradient(const float* prob, const int32_t* labels, const float* inter,
                             const float* uni, int64_t n, ActivationView a, float* dlogits) {
  const int64_t c = a.channels, s = a.spatial;
  const int64_t v = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (v >= n * s) return;
  const int64_t i = v / s, q = v % s;
  const int32_t label = labels[v];
  const float dice_terms = static_cast<float>(n * (c - 1)), voxels = static_cast<float>(n * s);
  auto dice_grad = [&](int64_t j) {
    if (j == 0) return 0.0f;
    const float t = label == j ? 1.0f : 0.0f;
    const float u = uni[i * c + j] + kDiceSmooth;
    return -0.5f * (2.0f * t * u - (2.0f * inter[i * c + j] + kDiceSmooth)) / (u * u) / dice_terms;
  };
  float dot = 0.0f;
  for (int64_t j = 0; j < c; ++j) dot += dice_grad(j) * prob[a.Offset(i, j, q)];
  for (int64_t j = 0; j < c; ++j) {
    const float p = prob[a.Offset(i, j, q)];
    const float dce = 0.5f * (p - (label == j ? 1.0f : 0.0f)) / voxels;
    dlogits[a.Offset(i, j, q)] = p * (dice_grad(j) - dot) + dce;
  }
}

// One block per row: each thread keeps the first largest of its strided
// elements, then the block keeps the largest, the lower index on a tie.
__global__ void ArgmaxRowsKernel(const float* logits, int64_t classes, int32_t* argmax) {
  const float* z = logits + blockIdx.x * classes;
  float best = 0.0f;
  int64_t index = -1;
  for (int64_t j = threadIdx.x; j < classes; j += kThreads) {
    const float v = z[j];
    if (!isnan(v) && (index < 0 || v > best)) {
      best = v;
      index = j;
    }
  }
  __shared__ float values[kThreads];
  __shared__ int64_t indices[kThreads];
  values[threadIdx.x] = best;
  indices[threadIdx.x] = index;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const float v = values[threadIdx.x + stride];
      const int64_t i = indices[threadIdx.x + stride];
      const int64_t mine = indices[threadIdx.x];
      if (i >= 0 &&
          (mine < 0 || v > values[threadIdx.x] || (v == values[threadIdx.x] && i < mine))) {
        values[threadIdx.x] = v;
        indices[threadIdx.x] = i;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) argmax[blockIdx.x] = static_cast<int32_t>(indices[0] < 0 ? 0 : indices[0]);
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

void DiceCrossEntropy(const Tensor& logits, const Tensor& labels, const Tensor& loss,
                      const Tensor& dlogits, const Tensor& workspace) {
  const ActivationView a = detail::ViewOf(logits);
  const int64_t n = logits.dim(0), c = a.channels, s = a.spatial;
  MLPERF_CHECK(c >= 2 && labels.numel() == n * s && labels.dtype() == core::DType::kI32);
  MLPERF_CHECK(dlogits.numel() == logits.numel() &&
               detail::ChannelsLast(dlogits) == a.channels_last &&
               workspace.numel() >= DiceCrossEntropyWorkspaceElements(n, c, s));
  float* prob = workspace.f32();
  float* inter = prob + n * c * s;
  float* uni = inter + n * c;
  float* voxel_ce = static_cast<float*>(Scratch(n * s * sizeof(float), kScratchReduce));
  const unsigned voxel_blocks = static_cast<unsigned>((n * s + kThreads - 1) / kThreads);
  DiceVoxelSoftmax<<<voxel_blocks, kThreads, 0, Stream()>>>(logits.f32(), labels.as<int32_t>(), n,
                                                            a, prob, voxel_ce);
  CUDA_CHECK_LAUNCH();
  DiceSums<<<dim3(static_cast<unsigned>(n), static_cast<unsigned>(c - 1)), kThreads, 0, Stream()>>>(
      prob, labels.as<int32_t>(), a, inter, uni);
  CUDA_CHECK_LAUNCH();
  DiceLoss<<<1, kThreads, 0, Stream()>>>(voxel_ce, n * s, inter, uni, n, c, loss.f32());
  CUDA_CHECK_LAUNCH();
  DiceGradient<<<voxel_blocks, kThreads, 0, Stream()>>>(prob, labels.as<int32_t>(), inter, uni, n,
                                                        a, dlogits.f32());
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

void ArgmaxRows(const Tensor& logits, const Tensor& argmax) {
  const int64_t classes = logits.dim(logits.shape().rank() - 1), rows = logits.numel() / classes;
  MLPERF_CHECK(argmax.dtype() == core::DType::kI32 && argmax.numel() == rows);
  if (rows == 0) return;
  ArgmaxRowsKernel<<<static_cast<unsigned>(rows), kThreads, 0, Stream()>>>(logits.f32(), classes,
                                                                           argmax.as<int32_t>());
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(SoftmaxCrossEntropy, Cuda, SoftmaxCrossEntropy);
MLPERF_REGISTER_KERNEL(DiceCrossEntropy, Cuda, DiceCrossEntropy);
MLPERF_REGISTER_KERNEL(MaskedLmLoss, Cuda, MaskedLmLoss);
MLPERF_REGISTER_KERNEL(ArgmaxRows, Cuda, ArgmaxRows);

}  // namespace mlperf::cuda
