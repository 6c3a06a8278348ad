#include "reference/kernels/cpu/loss.h"

#include <cmath>

#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/vec_math.h"
#include "reference/kernels/ops/loss.h"

namespace mlperf::cpu {
namespace {

using core::Tensor;

// log(sum(exp(row))) of n values `stride` apart; softmax_j = exp(z_j - lse).
double LogSumExp(const float* row, int64_t n, int64_t stride) {
  double max = row[0];
  for (int64_t j = 1; j < n; ++j) max = std::fmax(max, row[j * stride]);
  double sum = 0.0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(row[j * stride] - max);
  return max + std::log(sum);
}

}  // namespace

void SoftmaxCrossEntropy(float label_smoothing, float normalizer, const Tensor& logits,
                         const Tensor& labels, const Tensor& loss, const Tensor& dlogits) {
  const int64_t classes = logits.dim(logits.shape().rank() - 1);
  const int64_t rows = logits.numel() / classes;
  MLPERF_CHECK(labels.numel() == rows && labels.dtype() == core::DType::kI32);
  const double off = label_smoothing / classes, on = 1.0 - label_smoothing + off;
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (WorthParallel(logits.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = logits.f32() + r * classes;
    const double lse = LogSumExp(z, classes, 1);
    const int32_t label = labels.as<int32_t>()[r];
    MLPERF_CHECK(label >= 0 && label < classes);
    for (int64_t j = 0; j < classes; ++j) {
      const double target = j == label ? on : off;
      total += target * (lse - z[j]);
      dlogits.f32()[r * classes + j] =
          static_cast<float>((std::exp(z[j] - lse) - target) / normalizer);
    }
  }
  loss.f32()[0] = static_cast<float>(total / normalizer);
}

void DiceCrossEntropy(const Tensor& logits, const Tensor& labels, const Tensor& loss,
                      const Tensor& dlogits, const Tensor& workspace) {
  // Logits [n, c, S] or channels-last [n, S, c]; probabilities in the same layout.
  const bool last = IsChannelsLast(logits);
  SameLayoutFamily(logits, dlogits);
  const int64_t n = logits.dim(0), c = last ? LastDim(logits) : logits.dim(1);
  const int64_t s = logits.numel() / (n * c);
  MLPERF_CHECK(c >= 2 && labels.numel() == n * s && dlogits.numel() == logits.numel() &&
               workspace.numel() >= DiceCrossEntropyWorkspaceElements(n, c, s));
  // Offset of (sample i, class 0, voxel q) and the stride between classes.
  const int64_t class_stride = last ? 1 : s;
  auto at = [&](int64_t i, int64_t q) { return last ? (i * s + q) * c : i * c * s + q; };
  constexpr double kSmooth = 1e-6;
  float* prob = workspace.f32();
  const int32_t* label = labels.as<int32_t>();
  double ce = 0.0;
#pragma omp parallel for reduction(+ : ce) if (WorthParallel(logits.numel()))
  for (int64_t v = 0; v < n * s; ++v) {
    const int64_t o = at(v / s, v % s);
    const float* z = logits.f32() + o;
    const double lse = LogSumExp(z, c, class_stride);
    MLPERF_CHECK(label[v] >= 0 && label[v] < c);
    ce += lse - z[label[v] * class_stride];
    for (int64_t j = 0; j < c; ++j)
      prob[o + j * class_stride] = static_cast<float>(std::exp(z[j * class_stride] - lse));
  }
  const double voxels = static_cast<double>(n * s);
  const double dice_terms = static_cast<double>(n * (c - 1));
  // Per (sample, class): intersection and union; then dL/dp, then the softmax
  // Jacobian over classes per voxel.
  float* inter = prob + n * c * s;
  float* uni = inter + n * c;
  double dice_sum = 0.0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 1; j < c; ++j) {
      double sum_pt = 0.0, sum_p_plus_t = 0.0;
      for (int64_t q = 0; q < s; ++q) {
        const double p = prob[at(i, q) + j * class_stride];
        const double t = label[i * s + q] == j ? 1.0 : 0.0;
        sum_pt += p * t;
        sum_p_plus_t += p + t;
      }
      inter[i * c + j] = static_cast<float>(sum_pt);
      uni[i * c + j] = static_cast<float>(sum_p_plus_t);
      dice_sum += (2.0 * sum_pt + kSmooth) / (sum_p_plus_t + kSmooth);
    }
  loss.f32()[0] = static_cast<float>(0.5 * (1.0 - dice_sum / dice_terms) + 0.5 * ce / voxels);
#pragma omp parallel for if (WorthParallel(logits.numel()))
  for (int64_t v = 0; v < n * s; ++v) {
    const int64_t i = v / s, o = at(i, v % s);
    // d loss / d p_j of the dice term (zero for the background class).
    auto dice_grad = [&](int64_t j) {
      if (j == 0) return 0.0;
      const double t = label[v] == j ? 1.0 : 0.0;
      const double u = static_cast<double>(uni[i * c + j]) + kSmooth;
      const double ddice = (2.0 * t * u - (2.0 * inter[i * c + j] + kSmooth)) / (u * u);
      return -0.5 * ddice / dice_terms;
    };
    double dot = 0.0;
    for (int64_t j = 0; j < c; ++j) dot += dice_grad(j) * prob[o + j * class_stride];
    for (int64_t j = 0; j < c; ++j) {
      const double p = prob[o + j * class_stride];
      const double dce = 0.5 * (p - (label[v] == j ? 1.0 : 0.0)) / voxels;
      dlogits.f32()[o + j * class_stride] = static_cast<float>(p * (dice_grad(j) - dot) + dce);
    }
  }
}

void MaskedLmLoss(const Tensor& logits, const Tensor& labels, const Tensor& weights,
                  const Tensor& loss, const Tensor& dlogits) {
  const int64_t vocab = logits.dim(logits.shape().rank() - 1), rows = logits.numel() / vocab;
  MLPERF_CHECK(labels.numel() == rows && weights.numel() == rows);
  const float* z_all = logits.f32();
  const float* w_all = weights.f32();
  const int32_t* label_all = labels.as<int32_t>();
  float* grad_all = dlogits.f32();
  double weight_sum = 0.0;
  for (int64_t r = 0; r < rows; ++r) weight_sum += w_all[r];
  const double denom = weight_sum + 1e-5;
  double total = 0.0;
  // A row per iteration: exp(z - max) once, into the gradient, which the
  // second pass scales to w (softmax - onehot) / denom (BERT: 30522 wide).
#pragma omp parallel for reduction(+ : total) if (WorthParallel(logits.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = z_all + r * vocab;
    float* grad = grad_all + r * vocab;
    const int32_t label = label_all[r];
    MLPERF_CHECK(label >= 0 && label < vocab);
    float max = z[0];
    for (int64_t j = 1; j < vocab; ++j) max = max < z[j] ? z[j] : max;
    for (int64_t j = 0; j < vocab; ++j) grad[j] = ExpF(z[j] - max);
    double sum = 0.0;
    for (int64_t j = 0; j < vocab; ++j) sum += grad[j];
    const double w = w_all[r];
    total += w * (max + std::log(sum) - z[label]);
    const double label_exp = grad[label];
    const float scale = static_cast<float>(w / (sum * denom));
    for (int64_t j = 0; j < vocab; ++j) grad[j] *= scale;
    grad[label] = static_cast<float>(w * (label_exp / sum - 1.0) / denom);
  }
  loss.f32()[0] = static_cast<float>(total / denom);
}

void ArgmaxRows(const Tensor& logits, const Tensor& argmax) {
  const int64_t classes = logits.dim(logits.shape().rank() - 1), rows = logits.numel() / classes;
  MLPERF_CHECK(argmax.dtype() == core::DType::kI32 && argmax.numel() == rows);
  const float* z_all = logits.f32();
  int32_t* out = argmax.as<int32_t>();
#pragma omp parallel for if (WorthParallel(logits.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* z = z_all + r * classes;
    int64_t best = -1;
    for (int64_t j = 0; j < classes; ++j)
      if (!std::isnan(z[j]) && (best < 0 || z[j] > z[best])) best = j;
    out[r] = static_cast<int32_t>(best < 0 ? 0 : best);
  }
}

MLPERF_REGISTER_KERNEL(SoftmaxCrossEntropy, Cpu, SoftmaxCrossEntropy);
MLPERF_REGISTER_KERNEL(DiceCrossEntropy, Cpu, DiceCrossEntropy);
MLPERF_REGISTER_KERNEL(MaskedLmLoss, Cpu, MaskedLmLoss);
MLPERF_REGISTER_KERNEL(ArgmaxRows, Cpu, ArgmaxRows);

}  // namespace mlperf::cpu
