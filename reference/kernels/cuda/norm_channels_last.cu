#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdlib>
#include <string_view>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/norm_channels_last.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Tensor;

// A block is 32 channels (one warp reads 32 neighbours of a row) by 8 rows;
// each thread keeps one channel and walks every 8th row of its block's
// chunk, four rows per iteration so that four loads are in flight.
constexpr int kLanes = 32, kRowsPerStep = 8, kUnroll = 4;
static_assert(kUnroll == 4, "the sums below are written out for four rows");

__device__ __forceinline__ float ToFloat(float v) { return v; }
__device__ __forceinline__ float ToFloat(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float ToFloat(__half v) { return __half2float(v); }

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}

// The chunk of rows of block (chunk, channel block, group).
struct Chunk {
  int64_t begin, end;
};
__device__ __forceinline__ Chunk RowsOf(int64_t rows, int64_t rows_per_chunk) {
  const int64_t begin = blockIdx.x * rows_per_chunk;
  const int64_t end = begin + rows_per_chunk;
  return {begin, end < rows ? end : rows};
}

// Calls one(i) with the element offset i = base + r * channels of each of
// this thread's rows r of the chunk, kUnroll rows at a time through
// four(i[4]) (which loads all four before using them).
template <typename One, typename Four>
__device__ __forceinline__ void ForRows(Chunk k, int64_t base, int64_t channels, One one,
                                        Four four) {
  int64_t r = k.begin + threadIdx.y;
  for (; r + (kUnroll - 1) * kRowsPerStep < k.end; r += kUnroll * kRowsPerStep) {
    const int64_t i[kUnroll] = {base + r * channels, base + (r + kRowsPerStep) * channels,
                                base + (r + 2 * kRowsPerStep) * channels,
                                base + (r + 3 * kRowsPerStep) * channels};
    four(i);
  }
  for (; r < k.end; r += kRowsPerStep) one(base + r * channels);
}

// Adds the 8 row-threads' (a, b) of each channel in a fixed order and
// writes them to partial[((group * chunks + chunk) * 2 + {0, 1}) * C + c].
__device__ __forceinline__ void WritePartial(float a, float b, int64_t c, int64_t channels,
                                             float* partial) {
  __shared__ float sa[kRowsPerStep][kLanes], sb[kRowsPerStep][kLanes];
  sa[threadIdx.y][threadIdx.x] = a;
  sb[threadIdx.y][threadIdx.x] = b;
  __syncthreads();
  if (threadIdx.y != 0 || c >= channels) return;
  a = b = 0.0f;
  for (int i = 0; i < kRowsPerStep; ++i) {
    a += sa[i][threadIdx.x];
    b += sb[i][threadIdx.x];
  }
  float* p = partial + (static_cast<int64_t>(blockIdx.z) * gridDim.x + blockIdx.x) * 2 * channels;
  p[c] = a;
  p[channels + c] = b;
}

// Partial sums of (x - shift) and (x - shift)^2 per (group, chunk, channel),
// shift being the group's first value of the channel.
template <typename T>
__global__ void MomentsPartial(const T* x, int64_t rows, int64_t channels, int64_t rows_per_chunk,
                               float* partial) {
  const int64_t c = blockIdx.y * kLanes + threadIdx.x;
  float s1 = 0.0f, s2 = 0.0f;
  if (c < channels) {
    const int64_t base = blockIdx.z * rows * channels + c;
    const float shift = ToFloat(x[base]);
    auto at = [&](int64_t i) { return ToFloat(x[i]) - shift; };
    ForRows(
        RowsOf(rows, rows_per_chunk), base, channels,
        [&](int64_t i) {
          const float v = at(i);
          s1 += v;
          s2 += v * v;
        },
        [&](const int64_t* i) {
          const float v0 = at(i[0]), v1 = at(i[1]), v2 = at(i[2]), v3 = at(i[3]);
          s1 += (v0 + v1) + (v2 + v3);
          s2 += (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3);
        });
  }
  WritePartial(s1, s2, c, channels, partial);
}

// The (group, channel) of this thread's warp, one warp per pair: -1 past
// the last (a whole warp at once, so that its shuffles stay complete).
__device__ __forceinline__ int64_t WarpPair(int64_t pairs) {
  const int64_t w = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / kLanes;
  return w < pairs ? w : -1;
}

// The sums of the (a, b) partials of pair (g, c) over the chunks, in fp64:
// lane l adds chunks l, l + 32, ..., then a fixed shuffle tree adds the
// lanes (the same order every run); the result is lane 0's.
__device__ __forceinline__ void SumChunks(const float* partial, int64_t g, int64_t c,
                                          int64_t chunks, int64_t channels, double* a, double* b) {
  double sa = 0.0, sb = 0.0;
  for (int64_t k = threadIdx.x % kLanes; k < chunks; k += kLanes) {
    const float* p = partial + (g * chunks + k) * 2 * channels;
    sa += p[c];
    sb += p[channels + c];
  }
  for (int offset = kLanes / 2; offset > 0; offset /= 2) {
    sa += __shfl_down_sync(0xffffffffu, sa, offset);
    sb += __shfl_down_sync(0xffffffffu, sb, offset);
  }
  *a = sa;
  *b = sb;
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
  save_mean[i] = static_cast<float>(mean);
  save_inv_std[i] = static_cast<float>(1.0 / sqrt(var + epsilon));
  if (running_mean == nullptr) return;
  const float unbiased = static_cast<float>(rows > 1 ? var * n / (n - 1.0) : var);
  running_mean[c] = (1.0f - momentum) * running_mean[c] + momentum * static_cast<float>(mean);
  running_var[c] = (1.0f - momentum) * running_var[c] + momentum * unbiased;
}

__global__ void InvStdKernel(const float* var, int64_t channels, float epsilon, float* inv_std) {
  const int64_t c = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (c < channels)
    inv_std[c] = static_cast<float>(1.0 / sqrt(static_cast<double>(var[c]) + epsilon));
}

template <typename T>
__global__ void Normalize(const T* x, int64_t rows, int64_t channels, int64_t rows_per_chunk,
                          const float* mean, const float* inv_std, const float* gamma,
                          const float* beta, const T* residual, bool relu, T* y) {
  const int64_t c = blockIdx.y * kLanes + threadIdx.x;
  if (c >= channels) return;
  const int64_t gc = blockIdx.z * channels + c, base = blockIdx.z * rows * channels + c;
  const float mu = mean[gc], scale = gamma[c] * inv_std[gc], shift = beta[c];
  // The rounding to y's type before the add is what a typed batch norm
  // followed by an add does; for fp32 it changes nothing.
  auto out = [&](float v, float res) {
    v = ToFloat(FromFloat<T>((v - mu) * scale + shift)) + res;
    return FromFloat<T>(relu ? fmaxf(v, 0.0f) : v);
  };
  auto res_at = [&](int64_t i) { return residual != nullptr ? ToFloat(residual[i]) : 0.0f; };
  ForRows(
      RowsOf(rows, rows_per_chunk), base, channels,
      [&](int64_t i) { y[i] = out(ToFloat(x[i]), res_at(i)); },
      [&](const int64_t* i) {
        float v[kUnroll], res[kUnroll];
        for (int j = 0; j < kUnroll; ++j) {
          v[j] = ToFloat(x[i[j]]);
          res[j] = res_at(i[j]);
        }
        for (int j = 0; j < kUnroll; ++j) y[i[j]] = out(v[j], res[j]);
      });
}

// Partial sums of dy and dy * (x - mean) per (group, chunk, channel); with
// relu, dy is zeroed in place where y <= 0 (NaN included) first.
template <typename T>
__global__ void BackwardPartial(const T* x, const T* y, T* dy, int64_t rows, int64_t channels,
                                int64_t rows_per_chunk, const float* mean, float* partial) {
  const int64_t c = blockIdx.y * kLanes + threadIdx.x;
  float s1 = 0.0f, s2 = 0.0f;
  if (c < channels) {
    const int64_t base = blockIdx.z * rows * channels + c;
    const float mu = mean[blockIdx.z * channels + c];
    auto grad = [&](int64_t i) {
      float d = ToFloat(dy[i]);
      if (y != nullptr && !(ToFloat(y[i]) > 0.0f)) {
        d = 0.0f;
        dy[i] = FromFloat<T>(0.0f);
      }
      return d;
    };
    ForRows(
        RowsOf(rows, rows_per_chunk), base, channels,
        [&](int64_t i) {
          const float d = grad(i);
          s1 += d;
          s2 += d * (ToFloat(x[i]) - mu);
        },
        [&](const int64_t* i) {
          float d[kUnroll], xc[kUnroll];
          for (int j = 0; j < kUnroll; ++j) {
            xc[j] = ToFloat(x[i[j]]) - mu;
            d[j] = grad(i[j]);
          }
          s1 += (d[0] + d[1]) + (d[2] + d[3]);
          s2 += (d[0] * xc[0] + d[1] * xc[1]) + (d[2] * xc[2] + d[3] * xc[3]);
        });
  }
  WritePartial(s1, s2, c, channels, partial);
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

template <typename T>
__global__ void BackwardApply(const T* x, const T* dy, int64_t rows, int64_t channels,
                              int64_t rows_per_chunk, const float* mean, const float* coef, T* dx) {
  const int64_t c = blockIdx.y * kLanes + threadIdx.x;
  if (c >= channels) return;
  const int64_t gc_count = gridDim.z * static_cast<int64_t>(channels);
  const int64_t gc = blockIdx.z * channels + c, base = blockIdx.z * rows * channels + c;
  const float mu = mean[gc], a = coef[gc], b = coef[gc_count + gc], d = coef[2 * gc_count + gc];
  auto out = [&](float dyv, float xv) { return FromFloat<T>(a * dyv - b * (xv - mu) - d); };
  ForRows(
      RowsOf(rows, rows_per_chunk), base, channels,
      [&](int64_t i) { dx[i] = out(ToFloat(dy[i]), ToFloat(x[i])); },
      [&](const int64_t* i) {
        float dv[kUnroll], xv[kUnroll];
        for (int j = 0; j < kUnroll; ++j) {
          dv[j] = ToFloat(dy[i[j]]);
          xv[j] = ToFloat(x[i[j]]);
        }
        for (int j = 0; j < kUnroll; ++j) dx[i[j]] = out(dv[j], xv[j]);
      });
}

// The grid of a pass over s: (chunks, channel blocks, groups), with chunks
// of rows_per_chunk rows. Reductions aim at about 1024 blocks (several per
// SM, few partial sums); pointwise passes at 256 rows per block.
struct Grid {
  dim3 blocks;
  int64_t rows_per_chunk;
};
Grid Reduction(const ChannelsLastGroups& s) {
  const int64_t cblocks = (s.channels + kLanes - 1) / kLanes;
  const int64_t max_chunks = std::max<int64_t>(1, (s.rows + 63) / 64);
  const int64_t chunks =
      std::clamp<int64_t>(1024 / std::max<int64_t>(1, cblocks * s.groups), 1, max_chunks);
  const int64_t per = (s.rows + chunks - 1) / chunks;
  return {dim3(static_cast<unsigned>((s.rows + per - 1) / per), static_cast<unsigned>(cblocks),
               static_cast<unsigned>(s.groups)),
          per};
}
Grid Pointwise(const ChannelsLastGroups& s) {
  constexpr int64_t kRowsPerBlock = 256;
  return {dim3(static_cast<unsigned>((s.rows + kRowsPerBlock - 1) / kRowsPerBlock),
               static_cast<unsigned>((s.channels + kLanes - 1) / kLanes),
               static_cast<unsigned>(s.groups)),
          kRowsPerBlock};
}
const dim3 kBlock(kLanes, kRowsPerStep);

void CheckShape(const ChannelsLastGroups& s, const Tensor& t) {
  // The final kernels take a warp per (group, channel), in at most 65535
  // blocks of 256 threads.
  MLPERF_CHECK(s.groups > 0 && s.rows > 0 && s.channels > 0 &&
               t.numel() == s.groups * s.rows * s.channels && s.groups <= 65535 &&
               s.groups * s.channels <= int64_t{65535} * 256 / kLanes);
}

// Calls fn(T{}) with the device type of dtype t.
template <typename Fn>
void ByType(DType t, Fn&& fn) {
  switch (t) {
    case DType::kBF16:
      return fn(__nv_bfloat16{});
    case DType::kF16:
      return fn(__half{});
    case DType::kF32:
      return fn(float{});
    default:
      MLPERF_CHECK_MSG(false, "channels-last norm: activations must be fp32, bf16 or fp16");
  }
}

bool g_own_kernels = std::getenv("MLPERF_CUDNN_BATCHNORM") == nullptr ||
                     std::string_view(std::getenv("MLPERF_CUDNN_BATCHNORM")) == "0";

}  // namespace

void SetChannelsLastNormKernels(bool on) { g_own_kernels = on; }
bool ChannelsLastNormKernels() { return g_own_kernels; }

void ChannelsLastMoments(const ChannelsLastGroups& s, const Tensor& x, float epsilon,
                         float momentum, float* save_mean, float* save_inv_std, float* running_mean,
                         float* running_var) {
  CheckShape(s, x);
  MLPERF_CHECK(running_mean == nullptr || s.groups == 1);
  const Grid grid = Reduction(s);
  float* partial = static_cast<float*>(
      Scratch(sizeof(float) * 2 * grid.blocks.x * s.groups * s.channels, kScratchReduce));
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data());
    MomentsPartial<T><<<grid.blocks, kBlock, 0, Stream()>>>(xp, s.rows, s.channels,
                                                            grid.rows_per_chunk, partial);
    CUDA_CHECK_LAUNCH();
    MomentsFinal<T><<<Blocks(s.groups * s.channels * kLanes), 256, 0, Stream()>>>(
        xp, s.groups, s.rows, s.channels, grid.blocks.x, partial, epsilon, momentum, save_mean,
        save_inv_std, running_mean, running_var);
    CUDA_CHECK_LAUNCH();
  });
}

const float* InferenceInvStd(const float* running_var, int64_t channels, float epsilon) {
  float* inv_std = static_cast<float*>(Scratch(sizeof(float) * channels, kScratchReduce));
  InvStdKernel<<<Blocks(channels), 256, 0, Stream()>>>(running_var, channels, epsilon, inv_std);
  CUDA_CHECK_LAUNCH();
  return inv_std;
}

void ChannelsLastNormalize(const ChannelsLastGroups& s, const Tensor& x, const float* mean,
                           const float* inv_std, const float* gamma, const float* beta,
                           const Tensor& residual, bool relu, const Tensor& y) {
  CheckShape(s, x);
  MLPERF_CHECK(y.numel() == x.numel() && y.dtype() == x.dtype());
  MLPERF_CHECK(residual.empty() ||
               (residual.numel() == x.numel() && residual.dtype() == x.dtype()));
  const Grid grid = Pointwise(s);
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    Normalize<T><<<grid.blocks, kBlock, 0, Stream()>>>(
        static_cast<const T*>(x.data()), s.rows, s.channels, grid.rows_per_chunk, mean, inv_std,
        gamma, beta, residual.empty() ? nullptr : static_cast<const T*>(residual.data()), relu,
        static_cast<T*>(y.data()));
    CUDA_CHECK_LAUNCH();
  });
}

void ChannelsLastNormBackward(const ChannelsLastGroups& s, bool relu, const Tensor& x,
                              const Tensor& y, const Tensor& dy, const float* gamma,
                              const float* mean, const float* inv_std, const Tensor& dx,
                              float* dgamma, float* dbeta) {
  CheckShape(s, x);
  MLPERF_CHECK(dy.numel() == x.numel() && dx.numel() == x.numel() && dy.dtype() == x.dtype() &&
               dx.dtype() == x.dtype());
  MLPERF_CHECK(!relu || (y.numel() == x.numel() && y.dtype() == x.dtype()));
  const Grid reduce = Reduction(s), apply = Pointwise(s);
  const int64_t gc = s.groups * s.channels;
  // [coefficients and parameter-gradient shares: 5 * groups * channels][partial sums]
  float* coef = static_cast<float*>(
      Scratch(sizeof(float) * (5 * gc + 2 * reduce.blocks.x * gc), kScratchReduce));
  float* partial = coef + 5 * gc;
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data());
    T* dyp = static_cast<T*>(dy.data());
    BackwardPartial<T><<<reduce.blocks, kBlock, 0, Stream()>>>(
        xp, relu ? static_cast<const T*>(y.data()) : nullptr, dyp, s.rows, s.channels,
        reduce.rows_per_chunk, mean, partial);
    CUDA_CHECK_LAUNCH();
    BackwardFinal<<<Blocks(gc * kLanes), 256, 0, Stream()>>>(
        s.groups, s.rows, s.channels, reduce.blocks.x, partial, gamma, inv_std, coef);
    CUDA_CHECK_LAUNCH();
    ParamGrads<<<Blocks(s.channels), 256, 0, Stream()>>>(s.groups, s.channels, coef, dgamma, dbeta);
    CUDA_CHECK_LAUNCH();
    BackwardApply<T><<<apply.blocks, kBlock, 0, Stream()>>>(
        xp, dyp, s.rows, s.channels, apply.rows_per_chunk, mean, coef, static_cast<T*>(dx.data()));
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace mlperf::cuda
