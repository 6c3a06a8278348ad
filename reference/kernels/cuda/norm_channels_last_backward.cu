// The backward of the channels-last batch and instance norms
// (cuda/norm_channels_last.h): one pass for the partial sums (with the
// addend and the ReLU mask), one for the coefficients, one for dx.
#include <cstdint>

#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/norm_channels_last.cuh"

namespace mlperf::cuda {
namespace {

using namespace channels_last;  // NOLINT: this file's own building blocks

// Partial sums of dy and dy * (x - mean) per (group, chunk, channel). With
// an addend, dy becomes dy + addend (rounded to T) first; with relu, dy is
// zeroed where y <= 0 (NaN included), read from the mask bits when given,
// else from y; what changed is written back.
template <typename T, int V, int L>
__global__ void BackwardPartial(const T* x, const T* y, const uint32_t* relu_bits, T* dy,
                                const T* addend, int64_t rows, int64_t channels,
                                int64_t rows_per_chunk, const float* mean, float* partial) {
  const int64_t c0 = FirstChannel<V, L>();
  float s1[V] = {}, s2[V] = {};
  if (c0 < channels) {
    const int64_t base = blockIdx.z * rows * channels + c0;
    float mu[V];
    for (int j = 0; j < V; ++j) mu[j] = mean[blockIdx.z * channels + c0 + j];
    // d: dy at i (row r), plus the addend and masked where y <= 0 (and
    // written back).
    auto grad = [&](int64_t i, int64_t r, float* d) {
      Pack<T, V>::Load(dy, i, d);
      bool changed = addend != nullptr;
      if (changed) {
        float a[V];
        Pack<T, V>::Load(addend, i, a);
        for (int j = 0; j < V; ++j) d[j] = ToFloat(FromFloat<T>(d[j] + a[j]));
      }
      if (relu_bits != nullptr || y != nullptr) {
        bool on[V];
        if (relu_bits != nullptr) {
          LoadMaskBits<V>(relu_bits, blockIdx.z * rows + r, channels, c0, on);
        } else {
          float yv[V];
          Pack<T, V>::Load(y, i, yv);
          for (int j = 0; j < V; ++j) on[j] = yv[j] > 0.0f;
        }
        for (int j = 0; j < V; ++j) {
          if (!on[j]) {
            d[j] = 0.0f;
            changed = true;
          }
        }
      }
      if (changed) Pack<T, V>::Store(dy, i, d);
    };
    ForRows<L>(
        RowsOf(rows, rows_per_chunk), base, channels,
        [&](int64_t i, int64_t r) {
          float d[V], xv[V];
          grad(i, r, d);
          Pack<T, V>::Load(x, i, xv);
          for (int j = 0; j < V; ++j) {
            s1[j] += d[j];
            s2[j] += d[j] * (xv[j] - mu[j]);
          }
        },
        [&](const int64_t* i, const int64_t* rows_of) {
          float d[kUnroll][V], xc[kUnroll][V];
          for (int r = 0; r < kUnroll; ++r) {
            Pack<T, V>::Load(x, i[r], xc[r]);
            grad(i[r], rows_of[r], d[r]);
          }
          for (int j = 0; j < V; ++j) {
            for (int r = 0; r < kUnroll; ++r) xc[r][j] -= mu[j];
            s1[j] += (d[0][j] + d[1][j]) + (d[2][j] + d[3][j]);
            s2[j] += (d[0][j] * xc[0][j] + d[1][j] * xc[1][j]) +
                     (d[2][j] * xc[2][j] + d[3][j] * xc[3][j]);
          }
        });
  }
  WritePartial<V, L>(s1, s2, c0, channels, partial);
}

// One warp per (group, channel): the coefficients of
// dx = a * dy - b * (x - mean) - d into coef[0..2][groups * channels], and
// the pair's shares of dgamma and dbeta into coef[3..4].
__global__ void BackwardFinal(int64_t groups, int64_t rows, int64_t channels, int64_t chunks,
                              const float* partial, const float* gamma, const float* inv_std,
                              float* coef) {
  const int64_t gc_count = groups * channels, gc = WarpPair(gc_count);
  if (gc < 0) return;
  const int64_t c = gc % channels;
  double s1, s2;
  SumChunks(partial, gc / channels, c, chunks, channels, &s1, &s2);
  if (threadIdx.x % kLanes != 0) return;
  const double is = inv_std[gc], a = gamma[c] * is, n = static_cast<double>(rows);
  coef[gc] = static_cast<float>(a);
  coef[gc_count + gc] = static_cast<float>(a * is * (s2 * is / n));
  coef[2 * gc_count + gc] = static_cast<float>(a * (s1 / n));
  coef[3 * gc_count + gc] = static_cast<float>(s2 * is);
  coef[4 * gc_count + gc] = static_cast<float>(s1);
}

// One thread per channel: dgamma and dbeta, the groups' shares added in
// order.
__global__ void ParamGrads(int64_t groups, int64_t channels, const float* coef, float* dgamma,
                           float* dbeta) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= channels) return;
  const int64_t gc_count = groups * channels;
  double dg = 0.0, db = 0.0;
  for (int64_t g = 0; g < groups; ++g) {
    dg += coef[3 * gc_count + g * channels + c];
    db += coef[4 * gc_count + g * channels + c];
  }
  dgamma[c] = static_cast<float>(dg);
  dbeta[c] = static_cast<float>(db);
}

template <typename T, int V, int L>
__global__ void BackwardApply(const T* x, const T* dy, int64_t rows, int64_t channels,
                              int64_t rows_per_chunk, const float* mean, const float* coef, T* dx) {
  const int64_t c0 = FirstChannel<V, L>();
  if (c0 >= channels) return;
  const int64_t gc_count = gridDim.z * static_cast<int64_t>(channels);
  const int64_t gc = blockIdx.z * channels + c0, base = blockIdx.z * rows * channels + c0;
  float mu[V], a[V], b[V], d[V];
  for (int j = 0; j < V; ++j) {
    mu[j] = mean[gc + j];
    a[j] = coef[gc + j];
    b[j] = coef[gc_count + gc + j];
    d[j] = coef[2 * gc_count + gc + j];
  }
  // In place: dv holds dy, then dx.
  auto out = [&](float* dv, const float* xv) {
    for (int j = 0; j < V; ++j) dv[j] = a[j] * dv[j] - b[j] * (xv[j] - mu[j]) - d[j];
  };
  ForRows<L>(
      RowsOf(rows, rows_per_chunk), base, channels,
      [&](int64_t i, int64_t) {
        float dv[V], xv[V];
        Pack<T, V>::Load(dy, i, dv);
        Pack<T, V>::Load(x, i, xv);
        out(dv, xv);
        Pack<T, V>::Store(dx, i, dv);
      },
      [&](const int64_t* i, const int64_t*) {
        float dv[kUnroll][V], xv[kUnroll][V];
        for (int r = 0; r < kUnroll; ++r) {
          Pack<T, V>::Load(dy, i[r], dv[r]);
          Pack<T, V>::Load(x, i[r], xv[r]);
        }
        for (int r = 0; r < kUnroll; ++r) {
          out(dv[r], xv[r]);
          Pack<T, V>::Store(dx, i[r], dv[r]);
        }
      });
}

}  // namespace

void ChannelsLastNormBackward(const ChannelsLastGroups& s, bool relu, const Tensor& x,
                              const Tensor& y, const Tensor& dy, const float* gamma,
                              const float* mean, const float* inv_std, const Tensor& dx,
                              float* dgamma, float* dbeta, const Tensor& addend,
                              const Tensor& relu_mask) {
  CheckShape(s, x);
  MLPERF_CHECK(dy.numel() == x.numel() && dx.numel() == x.numel() && dy.dtype() == x.dtype() &&
               dx.dtype() == x.dtype());
  // dy + addend is written to dy: the addend must be another tensor.
  MLPERF_CHECK(addend.empty() || (addend.numel() == x.numel() && addend.dtype() == x.dtype() &&
                                  addend.data() != dy.data()));
  const uint32_t* bits = relu ? MaskBits(s, relu_mask) : nullptr;
  const bool reads_y = relu && bits == nullptr;
  MLPERF_CHECK(!reads_y || (y.numel() == x.numel() && y.dtype() == x.dtype()));
  const int v =
      Width(x.dtype(), s.channels,
            {x.data(), reads_y ? y.data() : nullptr, dy.data(), dx.data(), addend.data()});
  const int lanes = LanesPerRow(v, s.channels);
  const Grid reduce = Reduction(s, v, lanes), apply = Pointwise(s, v, lanes);
  const int64_t gc = s.groups * s.channels;
  // [coefficients and parameter-gradient shares: 5 * groups * channels][partial sums]
  float* coef = static_cast<float*>(
      Scratch(sizeof(float) * (5 * gc + 2 * reduce.blocks.x * gc), kScratchReduce));
  float* partial = coef + 5 * gc;
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data());
    T* dyp = static_cast<T*>(dy.data());
    WithWidth<T>(v, s.channels, [&](auto width, auto lanes_per_row) {
      BackwardPartial<T, decltype(width)::value, decltype(lanes_per_row)::value>
          <<<reduce.blocks, kBlock, 0, Stream()>>>(
              xp, reads_y ? static_cast<const T*>(y.data()) : nullptr, bits, dyp,
              addend.empty() ? nullptr : static_cast<const T*>(addend.data()), s.rows, s.channels,
              reduce.rows_per_chunk, mean, partial);
    });
    CUDA_CHECK_LAUNCH();
    BackwardFinal<<<Blocks(gc * kLanes), 256, 0, Stream()>>>(
        s.groups, s.rows, s.channels, reduce.blocks.x, partial, gamma, inv_std, coef);
    CUDA_CHECK_LAUNCH();
    ParamGrads<<<Blocks(s.channels), 256, 0, Stream()>>>(s.groups, s.channels, coef, dgamma, dbeta);
    CUDA_CHECK_LAUNCH();
    WithWidth<T>(v, s.channels, [&](auto width, auto lanes_per_row) {
      BackwardApply<T, decltype(width)::value, decltype(lanes_per_row)::value>
          <<<apply.blocks, kBlock, 0, Stream()>>>(xp, dyp, s.rows, s.channels, apply.rows_per_chunk,
                                                  mean, coef, static_cast<T*>(dx.data()));
    });
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace mlperf::cuda
