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

int BnThreads(int64_t elements) { return WorthParallel(elements) ? omp_get_max_threads() : 1; }

// Rows [begin, end) of thread t of n.
void RowShare(int64_t rows, int t, int n, int64_t* begin, int64_t* end) {
  *begin = rows * t / n;
  *end = rows * (t + 1) / n;
}

// Calls body(r0, r1) for blocks of rows [0, count) of width c, then rounds
// each block's `out` rows to `round_to` while they are in cache.
template <typename Body>
void RoundedRowBlocks(int64_t count, int64_t c, core::DType round_to, float* out, Body body) {
  const int64_t block = std::max<int64_t>(1, 4096 / c);
  for (int64_t r0 = 0; r0 < count; r0 += block) {
    const int64_t r1 = std::min(count, r0 + block);
    body(r0, r1);
    RoundSpan(round_to, out + r0 * c, (r1 - r0) * c);
  }
}

// Per-channel affine y = (x - mean) * scale + beta, with the residual add and
// ReLU of a fused unit, over `count` contiguous channel vectors of width c
// (channels-last rows) or over one channel's contiguous run (c == 1), y
// rounded to `round_to`. With a residual, the normalised value is rounded
// too, before the add (precision.h's rounding points, as a GPU storing y
// in bf16/fp16 has them); rounding after the ReLU gives the same bits as
// before it. In fp32: subtracting the mean first keeps it exact where x is
// near the mean.
template <bool kRelu, bool kResidual>
void ApplyAffine(int64_t count, int64_t c, const float* x, const float* residual, const float* mean,
                 const float* scale, const float* beta, float* y, core::DType round_to) {
  const bool round_first = kResidual && round_to != core::DType::kF32;
  RoundedRowBlocks(count, c, round_to, y, [&](int64_t r0, int64_t r1) {
    if (round_first) {  // the block's rows are contiguous: whole-block passes, in cache
      for (int64_t r = r0; r < r1; ++r)
        for (int64_t j = 0; j < c; ++j)
          y[r * c + j] = (x[r * c + j] - mean[j]) * scale[j] + beta[j];
      float* yb = y + r0 * c;
      const float* rb = residual + r0 * c;
      const int64_t n = (r1 - r0) * c;
      RoundSpan(round_to, yb, n);
      for (int64_t i = 0; i < n; ++i) yb[i] += rb[i];
      if constexpr (kRelu)
        for (int64_t i = 0; i < n; ++i) yb[i] = yb[i] > 0.0f ? yb[i] : 0.0f;
      return;
    }
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * c;
      float* yr = y + r * c;
      for (int64_t j = 0; j < c; ++j) {
        float v = (xr[j] - mean[j]) * scale[j] + beta[j];
        if constexpr (kResidual) v += residual[r * c + j];
        if constexpr (kRelu) v = v > 0.0f ? v : 0.0f;
        yr[j] = v;
      }
    }
  });
}

ApplyFn PickApply(bool relu, bool residual) {
  if (relu) return residual ? ApplyAffine<true, true> : ApplyAffine<true, false>;
  return residual ? ApplyAffine<false, true> : ApplyAffine<false, false>;
}

// ApplyAffine's arithmetic in its order, rounding where it rounds under bf16.
template <bool kRelu, bool kResidual>
void ApplyAffineBf16(int64_t count, int64_t c, const float* x, const uint16_t* residual,
                     const float* mean, const float* scale, const float* beta, uint16_t* y) {
  for (int64_t r = 0; r < count; ++r) {
    const float* xr = x + r * c;
    uint16_t* yr = y + r * c;
    for (int64_t j = 0; j < c; ++j) {
      float v = (xr[j] - mean[j]) * scale[j] + beta[j];
      if constexpr (kResidual) v = RoundToBf16(v) + Bf16Value(residual[r * c + j]);
      if constexpr (kRelu) v = v > 0.0f ? v : 0.0f;
      yr[j] = Bf16Bits(v);
    }
  }
}

ApplyBf16Fn PickApplyBf16(bool relu, bool residual) {
  if (relu) return residual ? ApplyAffineBf16<true, true> : ApplyAffineBf16<true, false>;
  return residual ? ApplyAffineBf16<false, true> : ApplyAffineBf16<false, false>;
}

Affine AffineScratch(int64_t channels) {
  float* f = Scratch<float, 0>(3 * channels);
  return {f, f + channels, f + 2 * channels};
}

Affine InferenceAffine(const BatchNormParams& p, const Tensor& gamma, const Tensor& beta,
                       const Tensor& running_mean, const Tensor& running_var) {
  const int64_t channels = gamma.numel();
  MLPERF_CHECK(beta.numel() == channels && running_mean.numel() == channels &&
               running_var.numel() == channels);
  const Affine a = AffineScratch(channels);
  for (int64_t c = 0; c < channels; ++c) {
    const double inv_std = 1.0 / std::sqrt(static_cast<double>(running_var.f32()[c]) + p.epsilon);
    a.mean[c] = running_mean.f32()[c];
    a.scale[c] = static_cast<float>(gamma.f32()[c] * inv_std);
    a.beta[c] = beta.f32()[c];
  }
  return a;
}

void CheckForward(const Tensor& x, const Tensor& residual, const Tensor& y) {
  MLPERF_CHECK(x.numel() == y.numel());
  SameLayoutFamily(x, y);
  if (!residual.empty()) {
    MLPERF_CHECK(residual.numel() == x.numel());
    SameLayoutFamily(x, residual);
  }
}

int64_t Channels(const Tensor& x) { return IsChannelsLast(x) ? LastDim(x) : x.dim(1); }

// Applies `a` to `rows` channel vectors of width c, the rows shared by threads.
void ApplyRows(ApplyFn apply, int64_t rows, int64_t c, const float* x, const float* residual,
               const Affine& a, float* y, core::DType round_to, int threads) {
#pragma omp parallel num_threads(threads)
  {
    int64_t r0, r1;
    RowShare(rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
    apply(r1 - r0, c, x + r0 * c, residual == nullptr ? nullptr : residual + r0 * c, a.mean,
          a.scale, a.beta, y + r0 * c, round_to);
  }
}

// Applies `a` to x (plus residual, then ReLU) into y, in either layout.
void ApplyNormalization(bool relu, const Tensor& x, const Tensor& residual, const Affine& a,
                        const Tensor& y, core::DType round_to) {
  const ApplyFn apply = PickApply(relu, !residual.empty());
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

// Rows per block of fp32 partial sums (the statistics', the backward's),
// which are then added in fp64: fp32 runs twice the vector lanes of fp64,
// and over 64 rows it loses nothing that matters.
constexpr int64_t kSumBlockRows = 64;

// Mean and (biased) variance per channel of `rows` channel vectors of width
// c. Each thread sums a contiguous share of the rows into its own
// per-channel partials, a streaming read (a block of channels over all rows
// would stride through memory), and the partials are added in thread order,
// so results are reproducible for a given thread count. The sums are of x
// minus the first row, so the one-pass variance does not cancel, in fp32
// over blocks of kSumBlockRows rows and in fp64 across blocks, as in the
// backward (all fp64, half the vector lanes, made the ResNet-50 bf16 step
// 5% slower).
void RowMoments(const float* xp, int64_t rows, int64_t c, int threads, double* mean, double* var) {
  double* shift = Scratch<double, 1>((2 * threads + 1) * c);
  double* partial = shift + c;
  std::fill(partial, partial + 2 * threads * c, 0.0);
  for (int64_t j = 0; j < c; ++j) shift[j] = xp[j];
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    double* s1 = partial + 2 * t * c;
    double* s2 = s1 + c;
    int64_t r0, r1;
    RowShare(rows, t, omp_get_num_threads(), &r0, &r1);
    float* f = Scratch<float, 2>(3 * c);
    float *f1 = f, *f2 = f + c, *fs = f + 2 * c;
    for (int64_t j = 0; j < c; ++j) fs[j] = static_cast<float>(shift[j]);
    for (int64_t b0 = r0; b0 < r1; b0 += kSumBlockRows) {
      const int64_t b1 = std::min(r1, b0 + kSumBlockRows);
      std::fill(f, f + 2 * c, 0.0f);
      for (int64_t r = b0; r < b1; ++r) {
        const float* xr = xp + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const float v = xr[j] - fs[j];
          f1[j] += v;
          f2[j] += v * v;
        }
      }
      for (int64_t j = 0; j < c; ++j) {
        s1[j] += f1[j];
        s2[j] += f2[j];
      }
    }
  }
  for (int64_t j = 0; j < c; ++j) {
    double s1 = 0.0, s2 = 0.0;
    for (int t = 0; t < threads; ++t) {
      s1 += partial[2 * t * c + j];
      s2 += partial[(2 * t + 1) * c + j];
    }
    const double m = s1 / static_cast<double>(rows);
    mean[j] = shift[j] + m;
    var[j] = std::max(0.0, s2 / static_cast<double>(rows) - m * m);
  }
}

// Batch mean and (biased) variance per channel; channels-last x is read as
// [rows, channels].
void Moments(const Tensor& x, double* mean, double* var) {
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

// One block of rows: f1 += dy, f2 += dy * (x - mean). With an addend, dy
// first becomes dy + addend, rounded to `round_to`; with kRelu, dy is then
// masked by y > 0; each written back (own loops, with the row then in L1 for
// the sums: fused with them, the select does not vectorise).
template <bool kRelu>
void BackwardSumsBlock(int64_t rows, int64_t c, const float* __restrict x,
                       const float* __restrict y, float* __restrict dy,
                       const float* __restrict addend, core::DType round_to,
                       const float* __restrict mean, float* __restrict f1, float* __restrict f2) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    float* dyr = dy + r * c;
    if (addend != nullptr) {
      const float* ar = addend + r * c;
      for (int64_t j = 0; j < c; ++j) dyr[j] += ar[j];
      RoundSpan(round_to, dyr, c);
    }
    if constexpr (kRelu) {
      const float* yr = y + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const float raw = dyr[j];
        dyr[j] = yr[j] > 0.0f ? raw : 0.0f;
      }
    }
    for (int64_t j = 0; j < c; ++j) {
      const float g = dyr[j];
      f1[j] += g;
      f2[j] += g * (xr[j] - mean[j]);
    }
  }
}

// Sums per channel of dy and dy * (x - mean) into s1, s2 (fp64), over
// `count` channel vectors of width c (or one channel's contiguous run,
// c == 1). Called by each thread on its own rows.
template <bool kRelu>
void BackwardSums(int64_t count, int64_t c, const float* x, const float* y, float* dy,
                  const float* addend, core::DType round_to, const float* mean, double* s1,
                  double* s2) {
  float* f = Scratch<float, 2>(2 * c);
  for (int64_t r0 = 0; r0 < count; r0 += kSumBlockRows) {
    const int64_t rows = std::min(kSumBlockRows, count - r0);
    std::fill(f, f + 2 * c, 0.0f);
    BackwardSumsBlock<kRelu>(rows, c, x + r0 * c, kRelu ? y + r0 * c : nullptr, dy + r0 * c,
                             addend == nullptr ? nullptr : addend + r0 * c, round_to, mean, f,
                             f + c);
    for (int64_t j = 0; j < c; ++j) {
      s1[j] += f[j];
      s2[j] += f[c + j];
    }
  }
}

// dx = A * dy - B * (x - mean) - D per channel (GroupBackward's formula with
// its per-channel constants folded), in fp32, rounded to `round_to`.
void BackwardApply(int64_t count, int64_t c, const float* x, const float* dy, const float* mean,
                   const float* a, const float* b, const float* d, float* dx,
                   core::DType round_to) {
  RoundedRowBlocks(count, c, round_to, dx, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * c;
      const float* dyr = dy + r * c;
      float* dxr = dx + r * c;
      for (int64_t j = 0; j < c; ++j) dxr[j] = a[j] * dyr[j] - b[j] * (xr[j] - mean[j]) - d[j];
    }
  });
}

// Per-channel sums of dy and dy * (x - mean) over `rows` channel vectors of
// width c (dy first made dy + addend, rounded to `round_to`, with an addend,
// and masked by y > 0 with `relu`): per-thread partials over contiguous
// shares of the rows, added in thread order.
void RowBackwardSums(bool relu, int64_t rows, int64_t c, const float* x, const float* y, float* dy,
                     const float* addend, core::DType round_to, const float* mean, int threads,
                     double* sum_dy, double* sum_dy_xc) {
  double* partial = Scratch<double, 1>(2 * threads * c);
  std::fill(partial, partial + 2 * threads * c, 0.0);
  auto sums_fn = relu ? BackwardSums<true> : BackwardSums<false>;
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    int64_t r0, r1;
    RowShare(rows, t, omp_get_num_threads(), &r0, &r1);
    sums_fn(r1 - r0, c, x + r0 * c, y == nullptr ? nullptr : y + r0 * c, dy + r0 * c,
            addend == nullptr ? nullptr : addend + r0 * c, round_to, mean, partial + 2 * t * c,
            partial + (2 * t + 1) * c);
  }
  for (int64_t j = 0; j < c; ++j) {
    double s1 = 0.0, s2 = 0.0;
    for (int t = 0; t < threads; ++t) {
      s1 += partial[2 * t * c + j];
      s2 += partial[(2 * t + 1) * c + j];
    }
    sum_dy[j] = s1;
    sum_dy_xc[j] = s2;
  }
}

// BackwardApply over `rows` channel vectors, the rows shared by threads.
void RowBackwardApply(int64_t rows, int64_t c, const float* x, const float* dy, const float* mean,
                      const float* a, const float* b, const float* d, float* dx, int threads,
                      core::DType round_to) {
#pragma omp parallel num_threads(threads)
  {
    int64_t r0, r1;
    RowShare(rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
    BackwardApply(r1 - r0, c, x + r0 * c, dy + r0 * c, mean, a, b, d, dx + r0 * c, round_to);
  }
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
  const float* addp = nullptr;
  if (!addend.empty()) {
    MLPERF_CHECK(addend.numel() == x.numel());
    SameLayoutFamily(x, addend);
    if (IsChannelsLast(x)) {
      addp = addend.f32();  // added in the sums' pass
    } else {
      Accumulate(addend, dy, round_to);
    }
  }
  const int64_t channels = Channels(x), count = x.numel() / channels;
  const int threads = BnThreads(x.numel());
  // [sum dy][sum dy (x - mean)]
  double* sums = Scratch<double, 0>(2 * channels);
  double *sum_dy = sums, *sum_dy_xc = sums + channels;
  const float* mean = save_mean.f32();
  const float* xp = x.f32();
  const float* yp = relu ? y.f32() : nullptr;
  float* dyp = dy.f32();
  auto sums_fn = relu ? BackwardSums<true> : BackwardSums<false>;
  if (IsChannelsLast(x)) {
    RowBackwardSums(relu, count, channels, xp, yp, dyp, addp, round_to, mean, threads, sum_dy,
                    sum_dy_xc);
  } else {
    const Dims d = ChannelDims(x);
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
