#include "reference/kernels/cpu/norm.h"

#include <algorithm>
#include <cmath>

#include "reference/kernels/cpu/layout.h"
#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {
namespace {

using core::Tensor;

// x viewed as [outer, channels, inner]; statistics per channel over outer*inner.
struct Dims {
  int64_t outer, channels, inner;
};

Dims ChannelDims(const Tensor& x) {
  const int64_t n = x.dim(0), c = x.dim(1);
  return {n, c, x.numel() / (n * c)};
}

void ChannelMoments(const float* x, Dims d, int64_t c, double* mean, double* var) {
  double sum = 0.0, sum_sq = 0.0;
  for (int64_t i = 0; i < d.outer; ++i) {
    const float* row = x + (i * d.channels + c) * d.inner;
    for (int64_t q = 0; q < d.inner; ++q) sum += row[q];
  }
  const double count = static_cast<double>(d.outer * d.inner);
  *mean = sum / count;
  for (int64_t i = 0; i < d.outer; ++i) {
    const float* row = x + (i * d.channels + c) * d.inner;
    for (int64_t q = 0; q < d.inner; ++q) {
      const double t = row[q] - *mean;
      sum_sq += t * t;
    }
  }
  *var = sum_sq / count;
}

// The normalisation backward shared by all three norms, for one group of
// `count` elements reached through `at(i)`:
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

// Channels-last batch norm sees x as [rows, channels]. Each parallel iteration
// owns a block of channels and sweeps every row, so the per-channel sums live
// on its stack (no per-thread buffers to allocate and reduce) and are added in
// the same order as the channels-first loops, giving the same statistics.
constexpr int64_t kChannelBlock = 16;

struct RowsView {
  int64_t rows, channels;
};

RowsView ViewRows(const Tensor& x) { return {x.numel() / LastDim(x), LastDim(x)}; }

template <typename Body>
void ForChannelBlocks(RowsView v, Body body) {
#pragma omp parallel for if (WorthParallel(v.rows * v.channels))
  for (int64_t c0 = 0; c0 < v.channels; c0 += kChannelBlock)
    body(c0, std::min(kChannelBlock, v.channels - c0));
}

// y = x * scale[c] + shift[c] over channels [c0, c0 + nc) of every row.
void ApplyAffineRows(RowsView v, int64_t c0, int64_t nc, const double* scale, const double* shift,
                     const float* x, float* y) {
  for (int64_t r = 0; r < v.rows; ++r) {
    const float* xr = x + r * v.channels + c0;
    float* yr = y + r * v.channels + c0;
    for (int64_t j = 0; j < nc; ++j) yr[j] = static_cast<float>(xr[j] * scale[j] + shift[j]);
  }
}

void BatchNormTrainingChannelsLast(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                   const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                                   const Tensor& save_inv_std, const Tensor& running_mean,
                                   const Tensor& running_var) {
  const RowsView v = ViewRows(x);
  ForChannelBlocks(v, [&](int64_t c0, int64_t nc) {
    double mean[kChannelBlock] = {}, var[kChannelBlock] = {};
    for (int64_t r = 0; r < v.rows; ++r) {
      const float* xr = x.f32() + r * v.channels + c0;
      for (int64_t j = 0; j < nc; ++j) mean[j] += xr[j];
    }
    for (int64_t j = 0; j < nc; ++j) mean[j] /= static_cast<double>(v.rows);
    for (int64_t r = 0; r < v.rows; ++r) {
      const float* xr = x.f32() + r * v.channels + c0;
      for (int64_t j = 0; j < nc; ++j) {
        const double t = xr[j] - mean[j];
        var[j] += t * t;
      }
    }
    double scale[kChannelBlock], shift[kChannelBlock];
    for (int64_t j = 0; j < nc; ++j) {
      const int64_t c = c0 + j;
      var[j] /= static_cast<double>(v.rows);
      const double inv_std = 1.0 / std::sqrt(var[j] + p.epsilon);
      save_mean.f32()[c] = static_cast<float>(mean[j]);
      save_inv_std.f32()[c] = static_cast<float>(inv_std);
      const double unbiased = v.rows > 1 ? var[j] * v.rows / (v.rows - 1) : var[j];
      running_mean.f32()[c] =
          (1.0f - p.momentum) * running_mean.f32()[c] + p.momentum * static_cast<float>(mean[j]);
      running_var.f32()[c] =
          (1.0f - p.momentum) * running_var.f32()[c] + p.momentum * static_cast<float>(unbiased);
      scale[j] = gamma.f32()[c] * inv_std;
      shift[j] = beta.f32()[c] - mean[j] * scale[j];
    }
    ApplyAffineRows(v, c0, nc, scale, shift, x.f32(), y.f32());
  });
}

void BatchNormInferenceChannelsLast(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                                    const Tensor& beta, const Tensor& running_mean,
                                    const Tensor& running_var, const Tensor& y) {
  const RowsView v = ViewRows(x);
  ForChannelBlocks(v, [&](int64_t c0, int64_t nc) {
    double scale[kChannelBlock], shift[kChannelBlock];
    for (int64_t j = 0; j < nc; ++j) {
      const int64_t c = c0 + j;
      const double inv_std = 1.0 / std::sqrt(static_cast<double>(running_var.f32()[c]) + p.epsilon);
      scale[j] = gamma.f32()[c] * inv_std;
      shift[j] = beta.f32()[c] - running_mean.f32()[c] * scale[j];
    }
    ApplyAffineRows(v, c0, nc, scale, shift, x.f32(), y.f32());
  });
}

// GroupBackward's formula, a block of channels at a time.
void BatchNormBackwardChannelsLast(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                                   const Tensor& save_mean, const Tensor& save_inv_std,
                                   const Tensor& dx, const Tensor& dgamma, const Tensor& dbeta) {
  const RowsView v = ViewRows(x);
  ForChannelBlocks(v, [&](int64_t c0, int64_t nc) {
    double mean[kChannelBlock], inv_std[kChannelBlock];
    double s1[kChannelBlock] = {}, s2[kChannelBlock] = {};
    for (int64_t j = 0; j < nc; ++j) {
      mean[j] = save_mean.f32()[c0 + j];
      inv_std[j] = save_inv_std.f32()[c0 + j];
    }
    for (int64_t r = 0; r < v.rows; ++r) {
      const float* xr = x.f32() + r * v.channels + c0;
      const float* dyr = dy.f32() + r * v.channels + c0;
      for (int64_t j = 0; j < nc; ++j) {
        s1[j] += dyr[j];
        s2[j] += dyr[j] * (xr[j] - mean[j]) * inv_std[j];
      }
    }
    double m1[kChannelBlock], m2[kChannelBlock], g[kChannelBlock];
    for (int64_t j = 0; j < nc; ++j) {
      m1[j] = s1[j] / static_cast<double>(v.rows);
      m2[j] = s2[j] / static_cast<double>(v.rows);
      g[j] = gamma.f32()[c0 + j] * inv_std[j];
      dgamma.f32()[c0 + j] = static_cast<float>(s2[j]);
      dbeta.f32()[c0 + j] = static_cast<float>(s1[j]);
    }
    for (int64_t r = 0; r < v.rows; ++r) {
      const float* xr = x.f32() + r * v.channels + c0;
      const float* dyr = dy.f32() + r * v.channels + c0;
      float* dxr = dx.f32() + r * v.channels + c0;
      for (int64_t j = 0; j < nc; ++j) {
        const double xhat = (xr[j] - mean[j]) * inv_std[j];
        dxr[j] = static_cast<float>(g[j] * (dyr[j] - m1[j] - xhat * m2[j]));
      }
    }
  });
}

}  // namespace

void BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                              const Tensor& save_inv_std, const Tensor& running_mean,
                              const Tensor& running_var) {
  if (SameLayoutFamily(x, y)) {
    BatchNormTrainingChannelsLast(p, x, gamma, beta, y, save_mean, save_inv_std, running_mean,
                                  running_var);
    return;
  }
  const Dims d = ChannelDims(x);
  const int64_t count = d.outer * d.inner;
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t c = 0; c < d.channels; ++c) {
    double mean, var;
    ChannelMoments(x.f32(), d, c, &mean, &var);
    const double inv_std = 1.0 / std::sqrt(var + p.epsilon);
    save_mean.f32()[c] = static_cast<float>(mean);
    save_inv_std.f32()[c] = static_cast<float>(inv_std);
    const double unbiased = count > 1 ? var * count / (count - 1) : var;
    running_mean.f32()[c] =
        (1.0f - p.momentum) * running_mean.f32()[c] + p.momentum * static_cast<float>(mean);
    running_var.f32()[c] =
        (1.0f - p.momentum) * running_var.f32()[c] + p.momentum * static_cast<float>(unbiased);
    const double scale = gamma.f32()[c] * inv_std;
    const double shift = beta.f32()[c] - mean * scale;
    for (int64_t i = 0; i < d.outer; ++i) {
      const int64_t base = (i * d.channels + c) * d.inner;
      for (int64_t q = 0; q < d.inner; ++q)
        y.f32()[base + q] = static_cast<float>(x.f32()[base + q] * scale + shift);
    }
  }
}

void BatchNormForwardInference(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                               const Tensor& beta, const Tensor& running_mean,
                               const Tensor& running_var, const Tensor& y) {
  if (SameLayoutFamily(x, y)) {
    BatchNormInferenceChannelsLast(p, x, gamma, beta, running_mean, running_var, y);
    return;
  }
  const Dims d = ChannelDims(x);
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t c = 0; c < d.channels; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(running_var.f32()[c]) + p.epsilon);
    const double scale = gamma.f32()[c] * inv_std;
    const double shift = beta.f32()[c] - running_mean.f32()[c] * scale;
    for (int64_t i = 0; i < d.outer; ++i) {
      const int64_t base = (i * d.channels + c) * d.inner;
      for (int64_t q = 0; q < d.inner; ++q)
        y.f32()[base + q] = static_cast<float>(x.f32()[base + q] * scale + shift);
    }
  }
}

void BatchNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                       const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                       const Tensor& dgamma, const Tensor& dbeta) {
  SameLayoutFamily(x, dy);
  if (SameLayoutFamily(x, dx)) {
    BatchNormBackwardChannelsLast(x, dy, gamma, save_mean, save_inv_std, dx, dgamma, dbeta);
    return;
  }
  const Dims d = ChannelDims(x);
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t c = 0; c < d.channels; ++c) {
    auto at = [&](int64_t i) { return (i / d.inner * d.channels + c) * d.inner + i % d.inner; };
    double sum_dy, sum_dy_xhat;
    GroupBackward(d.outer * d.inner, at, x.f32(), dy.f32(), dx.f32(), gamma.f32()[c],
                  save_mean.f32()[c], save_inv_std.f32()[c], &sum_dy, &sum_dy_xhat);
    dgamma.f32()[c] = static_cast<float>(sum_dy_xhat);
    dbeta.f32()[c] = static_cast<float>(sum_dy);
  }
}

void InstanceNormForward(float epsilon, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                         const Tensor& y, const Tensor& save_mean, const Tensor& save_inv_std) {
  MLPERF_CHECK_MSG(!IsChannelsLast(x) && !IsChannelsLast(y), "instance norm is NC[D]HW only");
  const Dims d = ChannelDims(x);
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t g = 0; g < d.outer * d.channels; ++g) {
    const float* xg = x.f32() + g * d.inner;
    double mean, var;
    ChannelMoments(xg, Dims{1, 1, d.inner}, 0, &mean, &var);
    const double inv_std = 1.0 / std::sqrt(var + epsilon);
    save_mean.f32()[g] = static_cast<float>(mean);
    save_inv_std.f32()[g] = static_cast<float>(inv_std);
    const int64_t c = g % d.channels;
    for (int64_t q = 0; q < d.inner; ++q)
      y.f32()[g * d.inner + q] =
          static_cast<float>((xg[q] - mean) * inv_std * gamma.f32()[c] + beta.f32()[c]);
  }
}

void InstanceNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                          const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                          const Tensor& dgamma, const Tensor& dbeta) {
  MLPERF_CHECK_MSG(!IsChannelsLast(x) && !IsChannelsLast(dx), "instance norm is NC[D]HW only");
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

void LayerNormForward(float epsilon, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                      const Tensor& y, const Tensor& save_mean, const Tensor& save_inv_std) {
  const int64_t features = x.dim(x.shape().rank() - 1), rows = x.numel() / features;
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.f32() + r * features;
    double mean, var;
    ChannelMoments(xr, Dims{1, 1, features}, 0, &mean, &var);
    const double inv_std = 1.0 / std::sqrt(var + epsilon);
    save_mean.f32()[r] = static_cast<float>(mean);
    save_inv_std.f32()[r] = static_cast<float>(inv_std);
    for (int64_t f = 0; f < features; ++f)
      y.f32()[r * features + f] =
          static_cast<float>((xr[f] - mean) * inv_std * gamma.f32()[f] + beta.f32()[f]);
  }
}

void LayerNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                       const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                       const Tensor& dgamma, const Tensor& dbeta) {
  const int64_t features = x.dim(x.shape().rank() - 1), rows = x.numel() / features;
  // Here gamma varies along the normalised axis, so fold it into dy first.
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x.f32() + r * features;
    const float* dyr = dy.f32() + r * features;
    const double mean = save_mean.f32()[r], inv_std = save_inv_std.f32()[r];
    double s1 = 0.0, s2 = 0.0;
    for (int64_t f = 0; f < features; ++f) {
      const double g = static_cast<double>(dyr[f]) * gamma.f32()[f];
      s1 += g;
      s2 += g * (xr[f] - mean) * inv_std;
    }
    const double m1 = s1 / features, m2 = s2 / features;
    for (int64_t f = 0; f < features; ++f) {
      const double g = static_cast<double>(dyr[f]) * gamma.f32()[f];
      const double xhat = (xr[f] - mean) * inv_std;
      dx.f32()[r * features + f] = static_cast<float>(inv_std * (g - m1 - xhat * m2));
    }
  }
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t f = 0; f < features; ++f) {
    double dg = 0.0, db = 0.0;
    for (int64_t r = 0; r < rows; ++r) {
      const double xhat = (x.f32()[r * features + f] - save_mean.f32()[r]) * save_inv_std.f32()[r];
      dg += dy.f32()[r * features + f] * xhat;
      db += dy.f32()[r * features + f];
    }
    dgamma.f32()[f] = static_cast<float>(dg);
    dbeta.f32()[f] = static_cast<float>(db);
  }
}

}  // namespace mlperf::cpu
