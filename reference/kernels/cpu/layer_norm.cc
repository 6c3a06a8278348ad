// Layer norm (BERT): statistics per row over the last dimension.
#include <cmath>
#include <cstdint>

#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {

using core::Tensor;

namespace {

// Sum of n values in fp64 over 8 independent partial sums: a single running
// sum is one dependent add per element, 8x slower on BERT's 1024-wide rows.
template <typename Value>
double RowSum(int64_t n, Value value) {
  double s[8] = {};
  int64_t j = 0;
  for (; j + 8 <= n; j += 8)
    for (int k = 0; k < 8; ++k) s[k] += value(j + k);
  for (; j < n; ++j) s[0] += value(j);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

}  // namespace

// The pointers are read once, outside the loops, so that they vectorise;
// statistics in fp64, the per-element work in fp32.
void LayerNormForward(float epsilon, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                      const Tensor& y, const Tensor& save_mean, const Tensor& save_inv_std) {
  const int64_t features = x.dim(x.shape().rank() - 1), rows = x.numel() / features;
  const float* px = x.f32();
  const float* g = gamma.f32();
  const float* b = beta.f32();
  float* py = y.f32();
  float* pm = save_mean.f32();
  float* pis = save_inv_std.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * features;
    const double mean = RowSum(features, [&](int64_t f) { return xr[f]; }) / features;
    const double var = RowSum(features,
                              [&](int64_t f) {
                                const double t = xr[f] - mean;
                                return t * t;
                              }) /
                       features;
    const double inv_std = 1.0 / std::sqrt(var + epsilon);
    pm[r] = static_cast<float>(mean);
    pis[r] = static_cast<float>(inv_std);
    const float m = static_cast<float>(mean), is = static_cast<float>(inv_std);
    float* yr = py + r * features;
    for (int64_t f = 0; f < features; ++f) yr[f] = (xr[f] - m) * is * g[f] + b[f];
  }
}

void LayerNormBackward(const Tensor& x, const Tensor& dy, const Tensor& gamma,
                       const Tensor& save_mean, const Tensor& save_inv_std, const Tensor& dx,
                       const Tensor& dgamma, const Tensor& dbeta) {
  const int64_t features = x.dim(x.shape().rank() - 1), rows = x.numel() / features;
  const float* px = x.f32();
  const float* pdy = dy.f32();
  const float* g = gamma.f32();
  const float* pm = save_mean.f32();
  const float* pis = save_inv_std.f32();
  float* pdx = dx.f32();
  // Here gamma varies along the normalised axis, so fold it into dy first.
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * features;
    const float* dyr = pdy + r * features;
    const float m = pm[r], is = pis[r];
    const double s1 = RowSum(features, [&](int64_t f) { return double{dyr[f] * g[f]}; });
    const double s2 =
        RowSum(features, [&](int64_t f) { return double{dyr[f] * g[f]} * ((xr[f] - m) * is); });
    const float m1 = static_cast<float>(s1 / features), m2 = static_cast<float>(s2 / features);
    float* dxr = pdx + r * features;
    for (int64_t f = 0; f < features; ++f)
      dxr[f] = is * (dyr[f] * g[f] - m1 - (xr[f] - m) * is * m2);
  }
  // dgamma and dbeta: column sums over the rows, a block of columns per
  // iteration so that the rows are read along contiguous memory.
  constexpr int64_t kBlock = 256;
  float* pdg = dgamma.f32();
  float* pdb = dbeta.f32();
#pragma omp parallel for if (WorthParallel(x.numel()))
  for (int64_t begin = 0; begin < features; begin += kBlock) {
    const int64_t width = begin + kBlock < features ? kBlock : features - begin;
    double dg[kBlock] = {}, db[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = px + r * features + begin;
      const float* dyr = pdy + r * features + begin;
      const float m = pm[r], is = pis[r];
      for (int64_t f = 0; f < width; ++f) {
        dg[f] += double{dyr[f] * ((xr[f] - m) * is)};
        db[f] += dyr[f];
      }
    }
    for (int64_t f = 0; f < width; ++f) {
      pdg[begin + f] = static_cast<float>(dg[f]);
      pdb[begin + f] = static_cast<float>(db[f]);
    }
  }
}

}  // namespace mlperf::cpu
