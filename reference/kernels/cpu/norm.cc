#include "reference/kernels/cpu/norm.h"

#include <omp.h>

#include <algorithm>
#include <cmath>

#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/norm_rows.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"

namespace mlperf::cpu {

using core::Tensor;

namespace norm_detail {

void CheckForward(const Tensor& x, const Tensor& residual, const Tensor& y) {
  MLPERF_CHECK(x.numel() == y.numel());
  SameLayoutFamily(x, y);
  if (!residual.empty()) {
    MLPERF_CHECK(residual.numel() == x.numel());
    SameLayoutFamily(x, residual);
  }
}

int64_t Channels(const Tensor& x) { return IsChannelsLast(x) ? LastDim(x) : x.dim(1); }

// Applies `a` to x (plus residual, then ReLU) into y, in either layout.
void ApplyNormalization(bool relu, const Tensor& x, const Tensor& residual, const Affine& a,
                        const Tensor& y, core::DType round_to) {
  const ApplyFn apply = PickApply(relu, !residual.empty());
  if (IsBf16(y)) {
    MLPERF_CHECK_MSG(IsChannelsLast(x) && IsBf16(x) && (residual.empty() || IsBf16(residual)),
                     "batch norm: bf16 storage is channels-last x, residual and y");
    const int64_t c = LastDim(x);
    ApplyRows(relu, x.numel() / c, c, Bf16Data(x), residual.empty() ? nullptr : Bf16Data(residual),
              a, Bf16Data(y), BnThreads(x.numel()));
    return;
  }
  const float* res = residual.empty() ? nullptr : residual.f32();
  const float* xp = x.f32();
  float* yp = y.f32();
  const int threads = BnThreads(x.numel());
  if (IsChannelsLast(x)) {
    const int64_t c = LastDim(x);
    ApplyRows(apply, x.numel() / c, c, xp, res, a, yp, round_to, threads);
    return;
  }
  const Dims d = ChannelDims(x);
#pragma omp parallel for collapse(2) num_threads(threads)
  for (int64_t i = 0; i < d.outer; ++i)
    for (int64_t c = 0; c < d.channels; ++c) {
      const int64_t base = (i * d.channels + c) * d.inner;
      apply(d.inner, 1, xp + base, res == nullptr ? nullptr : res + base, a.mean + c, a.scale + c,
            a.beta + c, yp + base, round_to);
    }
}

// Batch mean and (biased) variance per channel; channels-last x is read as
// [rows, channels].
void Moments(const Tensor& x, double* mean, double* var) {
  if (IsBf16(x)) {
    const int64_t c = LastDim(x);
    return RowMoments(Bf16Data(x), x.numel() / c, c, BnThreads(x.numel()), mean, var);
  }
  const float* xp = x.f32();
  if (!IsChannelsLast(x)) {
    const Dims d = ChannelDims(x);
#pragma omp parallel for if (WorthParallel(x.numel()))
    for (int64_t c = 0; c < d.channels; ++c) ChannelMoments(xp, d, c, &mean[c], &var[c]);
    return;
  }
  const int64_t c = LastDim(x);
  RowMoments(xp, x.numel() / c, c, BnThreads(x.numel()), mean, var);
}

}  // namespace norm_detail

using namespace norm_detail;

void BatchNormActForwardTraining(const BatchNormParams& p, bool relu, const Tensor& x,
                                 const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                                 const Tensor& y, const Tensor& save_mean,
                                 const Tensor& save_inv_std, const Tensor& running_mean,
                                 const Tensor& running_var, core::DType round_to) {
  CheckForward(x, residual, y);
  const int64_t channels = Channels(x), count = x.numel() / channels;
  double* moments = Scratch<double, 0>(2 * channels);
  double *mean = moments, *var = moments + channels;
  Moments(x, mean, var);
  const Affine a = AffineScratch(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const double inv_std = 1.0 / std::sqrt(var[c] + p.epsilon);
    save_mean.f32()[c] = static_cast<float>(mean[c]);
    save_inv_std.f32()[c] = static_cast<float>(inv_std);
    const double unbiased = count > 1 ? var[c] * count / (count - 1) : var[c];
    running_mean.f32()[c] =
        (1.0f - p.momentum) * running_mean.f32()[c] + p.momentum * static_cast<float>(mean[c]);
    running_var.f32()[c] =
        (1.0f - p.momentum) * running_var.f32()[c] + p.momentum * static_cast<float>(unbiased);
    a.mean[c] = static_cast<float>(mean[c]);
    a.scale[c] = static_cast<float>(gamma.f32()[c] * inv_std);
    a.beta[c] = beta.f32()[c];
  }
  ApplyNormalization(relu, x, residual, a, y, round_to);
}

void BatchNormActForwardInference(const BatchNormParams& p, bool relu, const Tensor& x,
                                  const Tensor& residual, const Tensor& gamma, const Tensor& beta,
                                  const Tensor& running_mean, const Tensor& running_var,
                                  const Tensor& y, core::DType round_to) {
  CheckForward(x, residual, y);
  MLPERF_CHECK(gamma.numel() == Channels(x));
  ApplyNormalization(relu, x, residual, InferenceAffine(p, gamma, beta, running_mean, running_var),
                     y, round_to);
}

void BatchNormActBackward(bool relu, const Tensor& x, const Tensor& y, const Tensor& dy,
                          const Tensor& gamma, const Tensor& save_mean, const Tensor& save_inv_std,
                          const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta,
                          core::DType round_to, const Tensor& addend) {
  MLPERF_CHECK(x.numel() == dy.numel() && x.numel() == dx.numel());
  SameLayoutFamily(x, dy);
  SameLayoutFamily(x, dx);
  if (relu) {
    MLPERF_CHECK(y.numel() == x.numel());
    SameLayoutFamily(x, y);
  }
  const bool bf16 = IsBf16(x);
  if (bf16)
    MLPERF_CHECK_MSG(IsChannelsLast(x) && IsBf16(dy) && IsBf16(dx) && (!relu || IsBf16(y)) &&
                         (addend.empty() || IsBf16(addend)),
                     "batch norm backward: bf16 storage is channels-last x, y, dy, dx and addend");
  const float* addp = nullptr;
  if (!addend.empty()) {
    MLPERF_CHECK(addend.numel() == x.numel());
    SameLayoutFamily(x, addend);
    if (!IsChannelsLast(x)) {
      Accumulate(addend, dy, round_to);
    } else if (!bf16) {
      addp = addend.f32();  // added in the sums' pass
    }
  }
  const int64_t channels = Channels(x), count = x.numel() / channels;
  const int threads = BnThreads(x.numel());
  // [sum dy][sum dy (x - mean)]
  double* sums = Scratch<double, 0>(2 * channels);
  double *sum_dy = sums, *sum_dy_xc = sums + channels;
  const float* mean = save_mean.f32();
  const float* xp = bf16 ? nullptr : x.f32();
  const float* yp = relu && !bf16 ? y.f32() : nullptr;
  float* dyp = bf16 ? nullptr : dy.f32();
  if (bf16) {
    RowBackwardSums(relu, count, channels, Bf16Data(x), relu ? Bf16Data(y) : nullptr, Bf16Data(dy),
                    addend.empty() ? nullptr : Bf16Data(addend), mean, threads, sum_dy, sum_dy_xc);
  } else if (IsChannelsLast(x)) {
    RowBackwardSums(relu, count, channels, xp, yp, dyp, addp, round_to, mean, threads, sum_dy,
                    sum_dy_xc);
  } else {
    const Dims d = ChannelDims(x);
    const SumsFn sums_fn = PickBackwardSums(relu);
#pragma omp parallel for num_threads(threads)
    for (int64_t c = 0; c < d.channels; ++c) {
      double s1 = 0.0, s2 = 0.0;
      for (int64_t i = 0; i < d.outer; ++i) {
        const int64_t base = (i * d.channels + c) * d.inner;
        sums_fn(d.inner, 1, xp + base, yp == nullptr ? nullptr : yp + base, dyp + base, nullptr,
                core::DType::kF32, mean + c, &s1, &s2);
      }
      sum_dy[c] = s1;
      sum_dy_xc[c] = s2;
    }
  }
  // dx = gamma * inv_std * (dy - mean(dy) - xhat * mean(dy * xhat)).
  float* f = Scratch<float, 1>(4 * channels);
  float *mean_f = f, *a = f + channels, *b = f + 2 * channels, *d = f + 3 * channels;
  for (int64_t c = 0; c < channels; ++c) {
    const double inv_std = save_inv_std.f32()[c];
    const double g = gamma.f32()[c] * inv_std;
    const double m1 = sum_dy[c] / count, m2 = sum_dy_xc[c] * inv_std / count;
    dgamma.f32()[c] = static_cast<float>(sum_dy_xc[c] * inv_std);
    dbeta.f32()[c] = static_cast<float>(sum_dy[c]);
    mean_f[c] = save_mean.f32()[c];
    a[c] = static_cast<float>(g);
    b[c] = static_cast<float>(g * inv_std * m2);
    d[c] = static_cast<float>(g * m1);
  }
  if (bf16) {
    RowBackwardApply(count, channels, Bf16Data(x), Bf16Data(dy), mean_f, a, b, d, Bf16Data(dx),
                     threads);
    return;
  }
  float* dxp = dx.f32();
  if (IsChannelsLast(x)) {
    RowBackwardApply(count, channels, xp, dyp, mean_f, a, b, d, dxp, threads, round_to);
  } else {
    const Dims dims = ChannelDims(x);
#pragma omp parallel for collapse(2) num_threads(threads)
    for (int64_t i = 0; i < dims.outer; ++i)
      for (int64_t c = 0; c < dims.channels; ++c) {
        const int64_t o = (i * dims.channels + c) * dims.inner;
        BackwardApply(dims.inner, 1, xp + o, dyp + o, mean_f + c, a + c, b + c, d + c, dxp + o,
                      round_to);
      }
  }
}

void BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                              const Tensor& save_inv_std, const Tensor& running_mean,
                              const Tensor& running_var) {
  BatchNormActForwardTraining(p, /*relu=*/false, x, Tensor(), gamma, beta, y, save_mean,
                              save_inv_std, running_mean, running_var);
}

void BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, const Tensor& running_mean,
                               const Tensor& running_var, const Tensor& y) {
  BatchNormActForwardInference(p, /*relu=*/false, x, Tensor(), gamma, beta, running_mean,
                               running_var, y);
}

void BatchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                       const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                       const Tensor& dgamma, const Tensor& dbeta) {
  BatchNormActBackward(/*relu=*/false, x, Tensor(), dy, gamma, save_mean, save_inv_std, dx, dgamma,
                       dbeta);
}

}  // namespace mlperf::cpu
