// Instance norm on the CPU (cpu/norm.h): channels-last through the row
// passes it shares with the batch norm (norm_rows.h), one sample's rows at a
// time; channels-first per (sample, channel) group.
#include <omp.h>

#include <algorithm>
#include <cmath>

#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/cpu/norm_rows.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"
#include "reference/kernels/ops/elementwise.h"

namespace mlperf::cpu {
namespace {

using core::Tensor;
using namespace norm_detail;

// The normalisation backward for one group of `count` elements reached
// through `at(i)`:
//   dx = inv_std * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat)).
template <typename At>
void GroupBackward(int64_t count, At at, const float* x, const float* dy, float* dx, float gamma,
                   double mean, double inv_std, double* sum_dy, double* sum_dy_xhat) {
  double s1 = 0.0, s2 = 0.0;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = at(i);
    s1 += dy[j];
    s2 += dy[j] * (x[j] - mean) * inv_std;
  }
  *sum_dy = s1;
  *sum_dy_xhat = s2;
  const double m1 = s1 / count, m2 = s2 / count;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t j = at(i);
    const double xhat = (x[j] - mean) * inv_std;
    dx[j] = static_cast<float>(gamma * inv_std * (dy[j] - m1 - xhat * m2));
  }
}

// Instance norm channels-last: per sample, the batch norm of its [S, C] rows,
// in fp32 storage or in bf16 (x and y; the 3D U-Net's under bf16 on AMX).
void InstanceNormForwardRows(float epsilon, const Tensor& x, const Tensor& gamma,
                             const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                             const Tensor& save_inv_std, bool relu, core::DType round_to) {
  const bool bf16 = IsBf16(x);
  MLPERF_CHECK_MSG(bf16 == IsBf16(y), "instance norm: x and y in the same storage type");
  const int64_t n = x.dim(0), c = LastDim(x), rows = x.numel() / (n * c);
  const int threads = BnThreads(rows * c);
  double* moments = Scratch<double, 0>(2 * c);
  const Affine a = AffineScratch(c);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = i * rows * c;
    if (bf16) {
      RowMoments(Bf16Data(x) + o, rows, c, threads, moments, moments + c);
    } else {
      RowMoments(x.f32() + o, rows, c, threads, moments, moments + c);
    }
    for (int64_t j = 0; j < c; ++j) {
      float* mean = save_mean.f32() + i * c + j;
      float* inv_std = save_inv_std.f32() + i * c + j;
      *mean = static_cast<float>(moments[j]);
      *inv_std = static_cast<float>(1.0 / std::sqrt(moments[c + j] + epsilon));
      a.mean[j] = *mean;
      a.scale[j] = static_cast<float>(static_cast<double>(*inv_std) * gamma.f32()[j]);
      a.beta[j] = beta.f32()[j];
    }
    if (bf16) {
      ApplyRows(relu, rows, c, Bf16Data(x) + o, nullptr, a, Bf16Data(y) + o, threads);
    } else {
      ApplyRows(PickApply(relu, false), rows, c, x.f32() + o, nullptr, a, y.f32() + o, round_to,
                threads);
    }
  }
}

void InstanceNormBackwardRows(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                              const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                              const Tensor& dgamma, const Tensor& dbeta, const Tensor& relu_y) {
  const bool relu = !relu_y.empty(), bf16 = IsBf16(x);
  MLPERF_CHECK_MSG(bf16 == IsBf16(dy) && bf16 == IsBf16(dx) && (!relu || bf16 == IsBf16(relu_y)),
                   "instance norm backward: x, y, dy and dx in the same storage type");
  const int64_t n = x.dim(0), c = LastDim(x), rows = x.numel() / (n * c);
  const int threads = BnThreads(rows * c);
  // [sum dy][sum dy (x - mean)][dgamma][dbeta]
  double* sums = Scratch<double, 0>(4 * c);
  double *sum_dy = sums, *sum_dy_xc = sums + c, *dg = sums + 2 * c, *db = sums + 3 * c;
  std::fill(dg, dg + 2 * c, 0.0);
  float* f = Scratch<float, 1>(3 * c);
  float *a = f, *b = f + c, *d = f + 2 * c;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t o = i * rows * c;
    const float* mean = save_mean.f32() + i * c;
    if (bf16) {
      RowBackwardSums(relu, rows, c, Bf16Data(x) + o, relu ? Bf16Data(relu_y) + o : nullptr,
                      Bf16Data(dy) + o, nullptr, mean, threads, sum_dy, sum_dy_xc);
    } else {
      RowBackwardSums(relu, rows, c, x.f32() + o, relu ? relu_y.f32() + o : nullptr, dy.f32() + o,
                      nullptr, core::DType::kF32, mean, threads, sum_dy, sum_dy_xc);
    }
    for (int64_t j = 0; j < c; ++j) {
      const double inv_std = save_inv_std.f32()[i * c + j];
      const double g = gamma.f32()[j] * inv_std;
      const double m1 = sum_dy[j] / rows, m2 = sum_dy_xc[j] * inv_std / rows;
      dg[j] += sum_dy_xc[j] * inv_std;
      db[j] += sum_dy[j];
      a[j] = static_cast<float>(g);
      b[j] = static_cast<float>(g * inv_std * m2);
      d[j] = static_cast<float>(g * m1);
    }
    if (bf16) {
      RowBackwardApply(rows, c, Bf16Data(x) + o, Bf16Data(dy) + o, mean, a, b, d, Bf16Data(dx) + o,
                       threads);
    } else {
      RowBackwardApply(rows, c, x.f32() + o, dy.f32() + o, mean, a, b, d, dx.f32() + o, threads);
    }
  }
  for (int64_t j = 0; j < c; ++j) {
    dgamma.f32()[j] = static_cast<float>(dg[j]);
    dbeta.f32()[j] = static_cast<float>(db[j]);
  }
}

}  // namespace

void InstanceNormForward(float epsilon, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                         const Tensor& y, const Tensor& save_mean, const Tensor& save_inv_std,
                         bool relu, core::DType round_to) {
  MLPERF_CHECK(x.numel() == y.numel());
  if (SameLayoutFamily(x, y)) {
    InstanceNormForwardRows(epsilon, x, gamma, beta, y, save_mean, save_inv_std, relu, round_to);
    return;
  }
  const Dims d = ChannelDims(x);
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t g = 0; g < d.outer * d.channels; ++g) {
    const float* xg = x.f32() + g * d.inner;
    double mean, var;
    ChannelMoments(xg, Dims{1, 1, d.inner}, 0, &mean, &var);
    // Normalised with the saved (fp32) statistics, which the backward reads:
    // with few voxels per group and a large mean, the rounding of the mean
    // would otherwise make the two disagree on x-hat.
    save_mean.f32()[g] = static_cast<float>(mean);
    save_inv_std.f32()[g] = static_cast<float>(1.0 / std::sqrt(var + epsilon));
    mean = save_mean.f32()[g];
    const double inv_std = save_inv_std.f32()[g];
    const int64_t c = g % d.channels;
    float* yg = y.f32() + g * d.inner;
    for (int64_t q = 0; q < d.inner; ++q) {
      const float v = static_cast<float>((xg[q] - mean) * inv_std * gamma.f32()[c] + beta.f32()[c]);
      yg[q] = relu ? (v > 0.0f ? v : 0.0f) : v;
    }
    RoundSpan(round_to, yg, d.inner);
  }
}

void InstanceNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                          const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                          const Tensor& dgamma, const Tensor& dbeta, const Tensor& relu_y) {
  MLPERF_CHECK(x.numel() == dy.numel() && x.numel() == dx.numel());
  SameLayoutFamily(x, dy);
  if (!relu_y.empty()) {
    MLPERF_CHECK(relu_y.numel() == x.numel());
    SameLayoutFamily(x, relu_y);
  }
  if (SameLayoutFamily(x, dx)) {
    InstanceNormBackwardRows(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta, relu_y);
    return;
  }
  if (!relu_y.empty()) ops::ReluBackward(relu_y, dy, dy);
  const Dims d = ChannelDims(x);
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t c = 0; c < d.channels; ++c) {
    double db = 0.0, dg = 0.0;
    for (int64_t n = 0; n < d.outer; ++n) {
      const int64_t g = n * d.channels + c;
      auto at = [&](int64_t i) { return g * d.inner + i; };
      double sum_dy, sum_dy_xhat;
      GroupBackward(d.inner, at, x.f32(), dy.f32(), dx.f32(), gamma.f32()[c], save_mean.f32()[g],
                    save_inv_std.f32()[g], &sum_dy, &sum_dy_xhat);
      db += sum_dy;
      dg += sum_dy_xhat;
    }
    dgamma.f32()[c] = static_cast<float>(dg);
    dbeta.f32()[c] = static_cast<float>(db);
  }
}

}  // namespace mlperf::cpu
