#include "reference/kernels/cpu/norm.h"

#include <cmath>

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

}  // namespace

void BatchNormForwardTraining(const BatchNormParams& p, const Tensor& x, const Tensor& gamma,
                              const Tensor& beta, const Tensor& y, const Tensor& save_mean,
                              const Tensor& save_inv_std, const Tensor& running_mean,
                              const Tensor& running_var) {
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
