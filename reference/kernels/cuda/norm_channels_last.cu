// Statistics and normalisation of the channels-last batch and instance norms
// (cuda/norm_channels_last.h); the backward is norm_channels_last_backward.cu.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/norm_channels_last.cuh"
#include "reference/kernels/switches.h"

namespace mlperf::cuda {
namespace {

using namespace channels_last;  // NOLINT: this file's own building blocks

// Partial sums of (x - shift) and (x - shift)^2 per (group, chunk, channel),
// shift being the group's first value of the channel.
template <typename T, int V, int L>
__global__ void MomentsPartial(const T* x, int64_t rows, int64_t channels, int64_t rows_per_chunk,
                               float* partial) {
  const int64_t c0 = FirstChannel<V, L>();
  float s1[V] = {}, s2[V] = {};
  if (c0 < channels) {
    const int64_t base = blockIdx.z * rows * channels + c0;
    float shift[V];
    Pack<T, V>::Load(x, base, shift);
    ForRows<L>(
        RowsOf(rows, rows_per_chunk), base, channels,
        [&](int64_t i, int64_t) {
          float v[V];
          Pack<T, V>::Load(x, i, v);
          for (int j = 0; j < V; ++j) {
            v[j] -= shift[j];
            s1[j] += v[j];
            s2[j] += v[j] * v[j];
          }
        },
        [&](const int64_t* i, const int64_t*) {
          float v[kUnroll][V];
          for (int r = 0; r < kUnroll; ++r) Pack<T, V>::Load(x, i[r], v[r]);
          for (int j = 0; j < V; ++j) {
            const float v0 = v[0][j] - shift[j], v1 = v[1][j] - shift[j], v2 = v[2][j] - shift[j],
                        v3 = v[3][j] - shift[j];
            s1[j] += (v0 + v1) + (v2 + v3);
            s2[j] += (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3);
          }
        });
  }
  WritePartial<V, L>(s1, s2, c0, channels, partial);
}

// Saves the statistics of (group, channel) pair i, channel c, from its mean
// and biased variance over n rows; with running_mean, updates the running
// ones (the unbiased variance, as the CPU twin).
__device__ __forceinline__ void StoreMoments(double mean, double var, double n, float epsilon,
                                             float momentum, int64_t i, int64_t c, float* save_mean,
                                             float* save_inv_std, float* running_mean,
                                             float* running_var) {
  save_mean[i] = static_cast<float>(mean);
  save_inv_std[i] = static_cast<float>(1.0 / sqrt(var + epsilon));
  if (running_mean == nullptr) return;
  const float unbiased = static_cast<float>(n > 1.0 ? var * n / (n - 1.0) : var);
  running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * static_cast<float>(mean);
  running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
}

// One warp per (group, channel): the statistics from the chunks' sums.
template <typename T>
__global__ void MomentsFinal(const T* x, int64_t groups, int64_t rows, int64_t channels,
                             int64_t chunks, const float* partial, float epsilon, float momentum,
                             float* save_mean, float* save_inv_std, float* running_mean,
                             float* running_var) {
  const int64_t i = WarpPair(groups * channels);
  if (i < 0) return;
  const int64_t g = i / channels, c = i % channels;
  double s1, s2;
  SumChunks(partial, g, c, chunks, channels, &s1, &s2);
  if (threadIdx.x % kLanes != 0) return;
  const double n = static_cast<double>(rows), shifted = s1 / n;
  const double var = fmax(s2 / n - shifted * shifted, 0.0);
  const double mean = ToFloat(x[g * rows * channels + c]) + shifted;
  StoreMoments(mean, var, n, epsilon, momentum, i, c, save_mean, save_inv_std, running_mean,
               running_var);
}

__global__ void InvStdKernel(const float* var, int64_t channels, float epsilon, float* inv_std) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c < channels)
    inv_std[c] = static_cast<float>(1.0 / sqrt(static_cast<double>(var[c]) + epsilon));
}

// scale = gamma / sqrt(var + epsilon) (1/sqrt in fp64, as the CPU's
// inference batch norm) and bias = beta - mean * scale, the two in turn.
__global__ void ScaleBiasKernel(const float* gamma, const float* beta, const float* mean,
                                const float* var, int64_t channels, float epsilon,
                                float* scale_bias) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c >= channels) return;
  const float scale =
      static_cast<float>(gamma[c] * (1.0 / sqrt(static_cast<double>(var[c]) + epsilon)));
  scale_bias[c] = scale;
  scale_bias[channels + c] = beta[c] - mean[c] * scale;
}

// With relu_bits (and relu), also the mask y > 0 as bits; a lane past the
// last channel then only joins its warp's ballots (V of 1 or 2).
template <typename T, int V, int L>
__global__ void Normalize(const T* x, int64_t rows, int64_t channels, int64_t rows_per_chunk,
                          const float* mean, const float* inv_std, const float* gamma,
                          const float* beta, const T* residual, bool relu, T* y,
                          uint32_t* relu_bits) {
  const int64_t c0 = FirstChannel<V, L>();
  const bool live = c0 < channels;
  if (!live && (relu_bits == nullptr || V == 8)) return;
  const int64_t gc = blockIdx.z * channels + c0, base = blockIdx.z * rows * channels + c0;
  float mu[V] = {}, scale[V] = {}, shift[V] = {};
  for (int j = 0; live && j < V; ++j) {
    mu[j] = mean[gc + j];
    scale[j] = gamma[c0 + j] * inv_std[gc + j];
    shift[j] = beta[c0 + j];
  }
  // In place: v holds x, then y. The rounding to y's type before the add is
  // what a typed batch norm followed by an add does; for fp32 it changes
  // nothing.
  auto out = [&](float* v, const float* res) {
    for (int j = 0; j < V; ++j) {
      const float u = ToFloat(FromFloat<T>((v[j] - mu[j]) * scale[j] + shift[j])) + res[j];
      v[j] = relu ? fmaxf(u, 0.0f) : u;
    }
  };
  auto load = [&](int64_t i, float* v, float* res) {
    Pack<T, V>::Load(x, i, v);
    if (residual != nullptr) {
      Pack<T, V>::Load(residual, i, res);
    } else {
      for (int j = 0; j < V; ++j) res[j] = 0.0f;
    }
  };
  // The mask of row r from its output v: the stored y's sign.
  auto mask = [&](const float* v, int64_t r) {
    bool on[V];
    for (int j = 0; j < V; ++j) on[j] = live && ToFloat(FromFloat<T>(v[j])) > 0.0f;
    StoreMaskBits<V>(on, blockIdx.z * rows + r, channels, c0, relu_bits);
  };
  const bool masks = relu && relu_bits != nullptr;
  ForRows<L>(
      RowsOf(rows, rows_per_chunk), base, channels,
      [&](int64_t i, int64_t r) {
        float v[V] = {}, res[V];
        if (live) {
          load(i, v, res);
          out(v, res);
          Pack<T, V>::Store(y, i, v);
        }
        if (masks) mask(v, r);
      },
      [&](const int64_t* i, const int64_t* r) {
        float v[kUnroll][V] = {}, res[kUnroll][V];
        if (live) {
          for (int m = 0; m < kUnroll; ++m) load(i[m], v[m], res[m]);
          for (int m = 0; m < kUnroll; ++m) {
            out(v[m], res[m]);
            Pack<T, V>::Store(y, i[m], v[m]);
          }
        }
        if (masks)
          for (int m = 0; m < kUnroll; ++m) mask(v[m], r[m]);
      });
}

bool g_own_kernels = !ops::Switches().cudnn_batchnorm;
bool g_wide_kernels = ops::Switches().norm_wide;

}  // namespace

void SetChannelsLastNormKernels(bool on) { g_own_kernels = on; }
bool ChannelsLastNormKernels() { return g_own_kernels; }
void SetWideNormKernels(bool on) { g_wide_kernels = on; }
bool WideNormKernels() { return g_wide_kernels; }

void ChannelsLastMoments(const ChannelsLastGroups& s, const Tensor& x, float epsilon,
                         float momentum, float* save_mean, float* save_inv_std, float* running_mean,
                         float* running_var) {
  CheckShape(s, x);
  MLPERF_CHECK(running_mean == nullptr || s.groups == 1);
  const int v = Width(x.dtype(), s.channels, {x.data()});
  const Grid grid = Reduction(s, v, LanesPerRow(v, s.channels));
  float* partial = static_cast<float*>(
      Scratch(sizeof(float) * 2 * grid.blocks.x * s.groups * s.channels, kScratchReduce));
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data());
    WithWidth<T>(v, s.channels, [&](auto width, auto lanes) {
      MomentsPartial<T, decltype(width)::value, decltype(lanes)::value>
          <<<grid.blocks, kBlock, 0, Stream()>>>(xp, s.rows, s.channels, grid.rows_per_chunk,
                                                 partial);
    });
    CUDA_CHECK_LAUNCH();
    MomentsFinal<T><<<Blocks(s.groups * s.channels * kLanes), 256, 0, Stream()>>>(
        xp, s.groups, s.rows, s.channels, grid.blocks.x, partial, epsilon, momentum, save_mean,
        save_inv_std, running_mean, running_var);
    CUDA_CHECK_LAUNCH();
  });
}

const float* InferenceScaleBias(const float* gamma, const float* beta, const float* running_mean,
                                const float* running_var, int64_t channels, float epsilon) {
  float* scale_bias = static_cast<float*>(Scratch(sizeof(float) * 2 * channels, kScratchReduce));
  ScaleBiasKernel<<<Blocks(channels), 256, 0, Stream()>>>(gamma, beta, running_mean, running_var,
                                                          channels, epsilon, scale_bias);
  CUDA_CHECK_LAUNCH();
  return scale_bias;
}

const float* InferenceInvStd(const float* running_var, int64_t channels, float epsilon) {
  float* inv_std = static_cast<float*>(Scratch(sizeof(float) * channels, kScratchReduce));
  InvStdKernel<<<Blocks(channels), 256, 0, Stream()>>>(running_var, channels, epsilon, inv_std);
  CUDA_CHECK_LAUNCH();
  return inv_std;
}

int64_t ReluMaskWords(const ChannelsLastGroups& s) {
  return s.groups * s.rows * ((s.channels + 31) / 32);
}

void ChannelsLastNormalize(const ChannelsLastGroups& s, const Tensor& x, const float* mean,
                           const float* inv_std, const float* gamma, const float* beta,
                           const Tensor& residual, bool relu, const Tensor& y,
                           const Tensor& relu_mask) {
  CheckShape(s, x);
  MLPERF_CHECK(y.numel() == x.numel() && y.dtype() == x.dtype());
  MLPERF_CHECK(residual.empty() ||
               (residual.numel() == x.numel() && residual.dtype() == x.dtype()));
  uint32_t* bits = relu ? MaskBits(s, relu_mask) : nullptr;
  const int v = Width(x.dtype(), s.channels, {x.data(), residual.data(), y.data()});
  const Grid grid = Pointwise(s, v, LanesPerRow(v, s.channels));
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    WithWidth<T>(v, s.channels, [&](auto width, auto lanes) {
      Normalize<T, decltype(width)::value, decltype(lanes)::value>
          <<<grid.blocks, kBlock, 0, Stream()>>>(
              static_cast<const T*>(x.data()), s.rows, s.channels, grid.rows_per_chunk, mean,
              inv_std, gamma, beta,
              residual.empty() ? nullptr : static_cast<const T*>(residual.data()), relu,
              static_cast<T*>(y.data()), bits);
    });
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace mlperf::cuda
