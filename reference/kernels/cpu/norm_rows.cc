// The channels-last row passes of the batch and instance norms (norm_rows.h).
#include "reference/kernels/cpu/norm_rows.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"

namespace mlperf::cpu::norm_detail {

using core::Tensor;

namespace {

// Floats per block of rows that a pass keeps in cache between its steps.
constexpr int64_t kBlockFloats = 4096;

// Rows [begin, end) of thread t of n.
void RowShare(int64_t rows, int t, int n, int64_t* begin, int64_t* end) {
  *begin = rows * t / n;
  *end = rows * (t + 1) / n;
}

// Calls body(r0, r1) for blocks of rows [0, count) of width c, then rounds
// each block's `out` rows to `round_to` while they are in cache.
template <typename Body>
void RoundedRowBlocks(int64_t count, int64_t c, core::DType round_to, float* out, Body body) {
  const int64_t block = std::max<int64_t>(1, kBlockFloats / c);
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

// ApplyAffine's arithmetic in its order, rounding where it rounds under bf16.
// x in fp32 (a convolution's rows in cache) or in bf16 (TX = uint16_t).
template <bool kRelu, bool kResidual, typename TX = float>
void ApplyAffineBf16(int64_t count, int64_t c, const TX* x, const uint16_t* residual,
                     const float* mean, const float* scale, const float* beta, uint16_t* y) {
  for (int64_t r = 0; r < count; ++r) {
    const TX* xr = x + r * c;
    uint16_t* yr = y + r * c;
    for (int64_t j = 0; j < c; ++j) {
      float v = (StoredValue(xr[j]) - mean[j]) * scale[j] + beta[j];
      if constexpr (kResidual) v = RoundToBf16(v) + Bf16Value(residual[r * c + j]);
      if constexpr (kRelu) v = v > 0.0f ? v : 0.0f;
      yr[j] = Bf16Bits(v);
    }
  }
}

}  // namespace

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

ApplyFn PickApply(bool relu, bool residual) {
  if (relu) return residual ? ApplyAffine<true, true> : ApplyAffine<true, false>;
  return residual ? ApplyAffine<false, true> : ApplyAffine<false, false>;
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

void ApplyRows(bool relu, int64_t rows, int64_t c, const uint16_t* x, const uint16_t* residual,
               const Affine& a, uint16_t* y, int threads) {
  using Fn = void (*)(int64_t, int64_t, const uint16_t*, const uint16_t*, const float*,
                      const float*, const float*, uint16_t*);
  const bool add = residual != nullptr;
  const Fn apply =
      relu ? (add ? ApplyAffineBf16<true, true, uint16_t> : ApplyAffineBf16<true, false, uint16_t>)
           : (add ? ApplyAffineBf16<false, true, uint16_t>
                  : ApplyAffineBf16<false, false, uint16_t>);
#pragma omp parallel num_threads(threads)
  {
    int64_t r0, r1;
    RowShare(rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
    apply(r1 - r0, c, x + r0 * c, add ? residual + r0 * c : nullptr, a.mean, a.scale, a.beta,
          y + r0 * c);
  }
}

namespace {

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
// x in fp32 or in bf16 (T = uint16_t).
template <typename T>
void Moments(const T* xp, int64_t rows, int64_t c, int threads, double* mean, double* var) {
  double* shift = Scratch<double, 1>((2 * threads + 1) * c);
  double* partial = shift + c;
  std::fill(partial, partial + 2 * threads * c, 0.0);
  for (int64_t j = 0; j < c; ++j) shift[j] = StoredValue(xp[j]);
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
        const T* xr = xp + r * c;
        for (int64_t j = 0; j < c; ++j) {
          const float v = StoredValue(xr[j]) - fs[j];
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

}  // namespace

void RowMoments(const float* xp, int64_t rows, int64_t c, int threads, double* mean, double* var) {
  Moments(xp, rows, c, threads, mean, var);
}

void RowMoments(const uint16_t* xp, int64_t rows, int64_t c, int threads, double* mean,
                double* var) {
  Moments(xp, rows, c, threads, mean, var);
}

namespace {

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

// BackwardSumsBlock in bf16 storage (its arithmetic, dy + addend rounded to
// bf16), each row's dy made in g (c floats) and stored back rounded.
template <bool kRelu>
void BackwardSumsBlockBf16(int64_t rows, int64_t c, const uint16_t* __restrict x,
                           const uint16_t* __restrict y, uint16_t* __restrict dy,
                           const uint16_t* __restrict addend, const float* __restrict mean,
                           float* __restrict f1, float* __restrict f2, float* __restrict g) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint16_t* xr = x + r * c;
    uint16_t* dyr = dy + r * c;
    if (addend != nullptr) {
      const uint16_t* ar = addend + r * c;
      for (int64_t j = 0; j < c; ++j) g[j] = RoundToBf16(Bf16Value(dyr[j]) + Bf16Value(ar[j]));
    } else {
      for (int64_t j = 0; j < c; ++j) g[j] = Bf16Value(dyr[j]);
    }
    if constexpr (kRelu) {
      const uint16_t* yr = y + r * c;
      for (int64_t j = 0; j < c; ++j) g[j] = Bf16Value(yr[j]) > 0.0f ? g[j] : 0.0f;
    }
    if (kRelu || addend != nullptr)
      for (int64_t j = 0; j < c; ++j) dyr[j] = Bf16Bits(g[j]);
    for (int64_t j = 0; j < c; ++j) {
      f1[j] += g[j];
      f2[j] += g[j] * (Bf16Value(xr[j]) - mean[j]);
    }
  }
}

// Sums per channel of dy and dy * (x - mean) into s1, s2 (fp64), over
// `count` channel vectors of width c (or one channel's contiguous run,
// c == 1). Called by each thread on its own rows. In bf16 (T = uint16_t)
// each block is widened to fp32 and dy stored back.
template <bool kRelu, typename T>
void BackwardSums(int64_t count, int64_t c, const T* x, const T* y, T* dy, const T* addend,
                  core::DType round_to, const float* mean, double* s1, double* s2) {
  float* f = Scratch<float, 2>(3 * c);
  for (int64_t r0 = 0; r0 < count; r0 += kSumBlockRows) {
    const int64_t rows = std::min(kSumBlockRows, count - r0);
    std::fill(f, f + 2 * c, 0.0f);
    const T* yb = kRelu ? y + r0 * c : nullptr;
    const T* ab = addend == nullptr ? nullptr : addend + r0 * c;
    if constexpr (std::is_same_v<T, float>) {
      BackwardSumsBlock<kRelu>(rows, c, x + r0 * c, yb, dy + r0 * c, ab, round_to, mean, f, f + c);
    } else {
      BackwardSumsBlockBf16<kRelu>(rows, c, x + r0 * c, yb, dy + r0 * c, ab, mean, f, f + c,
                                   f + 2 * c);
    }
    for (int64_t j = 0; j < c; ++j) {
      s1[j] += f[j];
      s2[j] += f[c + j];
    }
  }
}

// dx = A * dy - B * (x - mean) - D per channel over `rows` rows of width c.
void BackwardRows(int64_t rows, int64_t c, const float* x, const float* dy, const float* mean,
                  const float* a, const float* b, const float* d, float* dx) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * c;
    const float* dyr = dy + r * c;
    float* dxr = dx + r * c;
    for (int64_t j = 0; j < c; ++j) dxr[j] = a[j] * dyr[j] - b[j] * (xr[j] - mean[j]) - d[j];
  }
}

// BackwardRows in bf16 storage, dx stored rounded.
void BackwardApplyBf16(int64_t count, int64_t c, const uint16_t* x, const uint16_t* dy,
                       const float* mean, const float* a, const float* b, const float* d,
                       uint16_t* dx) {
  for (int64_t r = 0; r < count; ++r) {
    const uint16_t* xr = x + r * c;
    const uint16_t* dyr = dy + r * c;
    uint16_t* dxr = dx + r * c;
    for (int64_t j = 0; j < c; ++j)
      dxr[j] = Bf16Bits(a[j] * Bf16Value(dyr[j]) - b[j] * (Bf16Value(xr[j]) - mean[j]) - d[j]);
  }
}

}  // namespace

SumsFn PickBackwardSums(bool relu) {
  return relu ? BackwardSums<true, float> : BackwardSums<false, float>;
}

// In fp32, rounded to `round_to` a block at a time while in cache.
void BackwardApply(int64_t count, int64_t c, const float* x, const float* dy, const float* mean,
                   const float* a, const float* b, const float* d, float* dx,
                   core::DType round_to) {
  RoundedRowBlocks(count, c, round_to, dx, [&](int64_t r0, int64_t r1) {
    BackwardRows(r1 - r0, c, x + r0 * c, dy + r0 * c, mean, a, b, d, dx + r0 * c);
  });
}

namespace {

// Per-thread partials over contiguous shares of the rows, added in thread
// order.
template <typename T>
void SumsOverRows(bool relu, int64_t rows, int64_t c, const T* x, const T* y, T* dy,
                  const T* addend, core::DType round_to, const float* mean, int threads,
                  double* sum_dy, double* sum_dy_xc) {
  double* partial = Scratch<double, 1>(2 * threads * c);
  std::fill(partial, partial + 2 * threads * c, 0.0);
  auto sums_fn = relu ? BackwardSums<true, T> : BackwardSums<false, T>;
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

}  // namespace

void RowBackwardSums(bool relu, int64_t rows, int64_t c, const float* x, const float* y, float* dy,
                     const float* addend, core::DType round_to, const float* mean, int threads,
                     double* sum_dy, double* sum_dy_xc) {
  SumsOverRows(relu, rows, c, x, y, dy, addend, round_to, mean, threads, sum_dy, sum_dy_xc);
}

void RowBackwardSums(bool relu, int64_t rows, int64_t c, const uint16_t* x, const uint16_t* y,
                     uint16_t* dy, const uint16_t* addend, const float* mean, int threads,
                     double* sum_dy, double* sum_dy_xc) {
  SumsOverRows(relu, rows, c, x, y, dy, addend, core::DType::kBF16, mean, threads, sum_dy,
               sum_dy_xc);
}

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

void RowBackwardApply(int64_t rows, int64_t c, const uint16_t* x, const uint16_t* dy,
                      const float* mean, const float* a, const float* b, const float* d,
                      uint16_t* dx, int threads) {
#pragma omp parallel num_threads(threads)
  {
    int64_t r0, r1;
    RowShare(rows, omp_get_thread_num(), omp_get_num_threads(), &r0, &r1);
    BackwardApplyBf16(r1 - r0, c, x + r0 * c, dy + r0 * c, mean, a, b, d, dx + r0 * c);
  }
}

}  // namespace mlperf::cpu::norm_detail
