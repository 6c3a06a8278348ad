#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string_view>
#include <type_traits>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/norm_channels_last.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Tensor;

// A block is 32 * V channels (one warp reads 32 * V neighbours of a row)
// by 8 rows; each thread keeps V neighbouring channels and walks every 8th
// row of its block's chunk, four rows per iteration so that four loads are
// in flight. V is 2 for 16-bit types where the channel count allows (a
// warp then reads 128 bytes, as with fp32), else 1; each channel's sums
// are added in the same order either way.
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

// V neighbouring elements of T as one load or store.
template <typename T, int V>
struct Pack;
template <typename T>
struct Pack<T, 1> {
  __device__ __forceinline__ static void Load(const T* p, int64_t i, float* v) {
    v[0] = ToFloat(p[i]);
  }
  __device__ __forceinline__ static void Store(T* p, int64_t i, const float* v) {
    p[i] = FromFloat<T>(v[0]);
  }
};
template <typename T, typename Two>
struct PackOfTwo {
  __device__ __forceinline__ static void Load(const T* p, int64_t i, float* v) {
    const Two q = *reinterpret_cast<const Two*>(p + i);
    v[0] = ToFloat(q.x);
    v[1] = ToFloat(q.y);
  }
  __device__ __forceinline__ static void Store(T* p, int64_t i, const float* v) {
    Two q;
    q.x = FromFloat<T>(v[0]);
    q.y = FromFloat<T>(v[1]);
    *reinterpret_cast<Two*>(p + i) = q;
  }
};
template <>
struct Pack<__nv_bfloat16, 2> : PackOfTwo<__nv_bfloat16, __nv_bfloat162> {};
template <>
struct Pack<__half, 2> : PackOfTwo<__half, __half2> {};

// This thread's first channel.
template <int V>
__device__ __forceinline__ int64_t FirstChannel() {
  return (blockIdx.y * static_cast<int64_t>(kLanes) + threadIdx.x) * V;
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

// Calls one(i, r) with the element offset i = base + r * channels of each
// of this thread's rows r of the chunk, kUnroll rows at a time through
// four(i[4], r) (rows r + m * kRowsPerStep; it loads all four before using
// them). The loop is the same for every lane of a warp.
template <typename One, typename Four>
__device__ __forceinline__ void ForRows(Chunk k, int64_t base, int64_t channels, One one,
                                        Four four) {
  int64_t r = k.begin + threadIdx.y;
  for (; r + (kUnroll - 1) * kRowsPerStep < k.end; r += kUnroll * kRowsPerStep) {
    const int64_t i[kUnroll] = {base + r * channels, base + (r + kRowsPerStep) * channels,
                                base + (r + 2 * kRowsPerStep) * channels,
                                base + (r + 3 * kRowsPerStep) * channels};
    four(i, r);
  }
  for (; r < k.end; r += kRowsPerStep) one(base + r * channels, r);
}

// The ReLU's mask as bits (ReluMaskWords): a row of channels is
// ceil(channels / 32) words, channel c at bit c % 32 of word c / 32; rows
// in order over the groups.
__device__ __forceinline__ int64_t MaskWordsPerRow(int64_t channels) {
  return (channels + 31) / 32;
}

// The 16 low bits of v on the even bits of the result.
__device__ __forceinline__ uint32_t SpreadEven(uint32_t v) {
  v &= 0xffffu;
  v = (v | (v << 8)) & 0x00ff00ffu;
  v = (v | (v << 4)) & 0x0f0f0f0fu;
  v = (v | (v << 2)) & 0x33333333u;
  return (v | (v << 1)) & 0x55555555u;
}

// Stores the warp's flags `on` (this lane's V channels from FirstChannel)
// for row `row` (counted over all groups) as mask bits: the warp's 32 * V
// channels are V whole words. Every lane of the warp must call it.
template <int V>
__device__ __forceinline__ void StoreMaskBits(const bool* on, int64_t row, int64_t channels,
                                              uint32_t* bits) {
  const int64_t per_row = MaskWordsPerRow(channels), first = blockIdx.y * static_cast<int64_t>(V);
  uint32_t low, high = 0;
  if constexpr (V == 1) {
    low = __ballot_sync(0xffffffffu, on[0]);
  } else {
    // Lane l holds channels 2l and 2l + 1 of the warp's 64.
    const uint32_t even = __ballot_sync(0xffffffffu, on[0]),
                   odd = __ballot_sync(0xffffffffu, on[1]);
    low = SpreadEven(even) | (SpreadEven(odd) << 1);
    high = SpreadEven(even >> 16) | (SpreadEven(odd >> 16) << 1);
  }
  const int lane = static_cast<int>(threadIdx.x);
  if (lane < V && first + lane < per_row)
    bits[row * per_row + first + lane] = lane == 0 ? low : high;
}

// This lane's V flags of row `row` from the mask bits.
template <int V>
__device__ __forceinline__ void LoadMaskBits(const uint32_t* bits, int64_t row, int64_t channels,
                                             int64_t c0, bool* on) {
  const uint32_t* words = bits + row * MaskWordsPerRow(channels);
  for (int j = 0; j < V; ++j) on[j] = (words[(c0 + j) / 32] >> ((c0 + j) % 32)) & 1u;
}

// Adds the 8 row-threads' (a, b) of each of channels c0.. c0 + V - 1 in a
// fixed order and writes them to
// partial[((group * chunks + chunk) * 2 + {0, 1}) * C + c].
template <int V>
__device__ __forceinline__ void WritePartial(const float* a, const float* b, int64_t c0,
                                             int64_t channels, float* partial) {
  __shared__ float sa[kRowsPerStep][kLanes * V], sb[kRowsPerStep][kLanes * V];
  for (int j = 0; j < V; ++j) {
    sa[threadIdx.y][threadIdx.x * V + j] = a[j];
    sb[threadIdx.y][threadIdx.x * V + j] = b[j];
  }
  __syncthreads();
  if (threadIdx.y != 0 || c0 >= channels) return;
  float* p = partial + (static_cast<int64_t>(blockIdx.z) * gridDim.x + blockIdx.x) * 2 * channels;
  for (int j = 0; j < V; ++j) {
    float ta = 0.0f, tb = 0.0f;
    for (int i = 0; i < kRowsPerStep; ++i) {
      ta += sa[i][threadIdx.x * V + j];
      tb += sb[i][threadIdx.x * V + j];
    }
    p[c0 + j] = ta;
    p[channels + c0 + j] = tb;
  }
}

// Partial sums of (x - shift) and (x - shift)^2 per (group, chunk, channel),
// shift being the group's first value of the channel.
template <typename T, int V>
__global__ void MomentsPartial(const T* x, int64_t rows, int64_t channels, int64_t rows_per_chunk,
                               float* partial) {
  const int64_t c0 = FirstChannel<V>();
  float s1[V] = {}, s2[V] = {};
  if (c0 < channels) {
    const int64_t base = blockIdx.z * rows * channels + c0;
    float shift[V];
    Pack<T, V>::Load(x, base, shift);
    ForRows(
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
        [&](const int64_t* i, int64_t) {
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
  WritePartial<V>(s1, s2, c0, channels, partial);
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

// With relu_bits (and relu), also the mask y > 0 as bits; a lane past the
// last channel then only joins its warp's ballots.
template <typename T, int V>
__global__ void Normalize(const T* x, int64_t rows, int64_t channels, int64_t rows_per_chunk,
                          const float* mean, const float* inv_std, const float* gamma,
                          const float* beta, const T* residual, bool relu, T* y,
                          uint32_t* relu_bits) {
  const int64_t c0 = FirstChannel<V>();
  const bool live = c0 < channels;
  if (!live && relu_bits == nullptr) return;
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
    StoreMaskBits<V>(on, blockIdx.z * rows + r, channels, relu_bits);
  };
  const bool masks = relu && relu_bits != nullptr;
  ForRows(
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
      [&](const int64_t* i, int64_t r) {
        float v[kUnroll][V] = {}, res[kUnroll][V];
        if (live) {
          for (int m = 0; m < kUnroll; ++m) load(i[m], v[m], res[m]);
          for (int m = 0; m < kUnroll; ++m) {
            out(v[m], res[m]);
            Pack<T, V>::Store(y, i[m], v[m]);
          }
        }
        if (masks)
          for (int m = 0; m < kUnroll; ++m) mask(v[m], r + m * kRowsPerStep);
      });
}

// Partial sums of dy and dy * (x - mean) per (group, chunk, channel). With
// an addend, dy becomes dy + addend (rounded to T) first; with relu, dy is
// zeroed where y <= 0 (NaN included), read from the mask bits when given,
// else from y; what changed is written back.
template <typename T, int V>
__global__ void BackwardPartial(const T* x, const T* y, const uint32_t* relu_bits, T* dy,
                                const T* addend, int64_t rows, int64_t channels,
                                int64_t rows_per_chunk, const float* mean, float* partial) {
  const int64_t c0 = FirstChannel<V>();
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
    ForRows(
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
        [&](const int64_t* i, int64_t r0) {
          float d[kUnroll][V], xc[kUnroll][V];
          for (int r = 0; r < kUnroll; ++r) {
            Pack<T, V>::Load(x, i[r], xc[r]);
            grad(i[r], r0 + r * kRowsPerStep, d[r]);
          }
          for (int j = 0; j < V; ++j) {
            for (int r = 0; r < kUnroll; ++r) xc[r][j] -= mu[j];
            s1[j] += (d[0][j] + d[1][j]) + (d[2][j] + d[3][j]);
            s2[j] += (d[0][j] * xc[0][j] + d[1][j] * xc[1][j]) +
                     (d[2][j] * xc[2][j] + d[3][j] * xc[3][j]);
          }
        });
  }
  WritePartial<V>(s1, s2, c0, channels, partial);
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

template <typename T, int V>
__global__ void BackwardApply(const T* x, const T* dy, int64_t rows, int64_t channels,
                              int64_t rows_per_chunk, const float* mean, const float* coef, T* dx) {
  const int64_t c0 = FirstChannel<V>();
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
  ForRows(
      RowsOf(rows, rows_per_chunk), base, channels,
      [&](int64_t i, int64_t) {
        float dv[V], xv[V];
        Pack<T, V>::Load(dy, i, dv);
        Pack<T, V>::Load(x, i, xv);
        out(dv, xv);
        Pack<T, V>::Store(dx, i, dv);
      },
      [&](const int64_t* i, int64_t) {
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

// The grid of a pass over s: (chunks, channel blocks, groups), with chunks
// of rows_per_chunk rows. Reductions aim at about 1024 blocks (several per
// SM, few partial sums); pointwise passes at 256 rows per block.
struct Grid {
  dim3 blocks;
  int64_t rows_per_chunk;
};
Grid Reduction(const ChannelsLastGroups& s, int v) {
  const int64_t cblocks = (s.channels + kLanes * v - 1) / (kLanes * v);
  const int64_t max_chunks = std::max<int64_t>(1, (s.rows + 63) / 64);
  const int64_t chunks =
      std::clamp<int64_t>(1024 / std::max<int64_t>(1, cblocks * s.groups), 1, max_chunks);
  const int64_t per = (s.rows + chunks - 1) / chunks;
  return {dim3(static_cast<unsigned>((s.rows + per - 1) / per), static_cast<unsigned>(cblocks),
               static_cast<unsigned>(s.groups)),
          per};
}
Grid Pointwise(const ChannelsLastGroups& s, int v) {
  constexpr int64_t kRowsPerBlock = 256;
  return {dim3(static_cast<unsigned>((s.rows + kRowsPerBlock - 1) / kRowsPerBlock),
               static_cast<unsigned>((s.channels + kLanes * v - 1) / (kLanes * v)),
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

// Channels per thread: 2 for 16-bit activations whose rows start on a pair
// (an even channel count) in 4-byte aligned tensors, else 1.
int Width(DType t, int64_t channels, std::initializer_list<const void*> data) {
  if (core::DTypeSize(t) != 2 || channels % 2 != 0) return 1;
  for (const void* p : data)
    if (reinterpret_cast<uintptr_t>(p) % 4 != 0) return 1;
  return 2;
}

// Calls fn(std::integral_constant<int, V>{}) with V = v (2 only for 16-bit T).
template <typename T, typename Fn>
void WithWidth(int v, Fn&& fn) {
  if constexpr (sizeof(T) == 2) {
    if (v == 2) return fn(std::integral_constant<int, 2>{});
  }
  fn(std::integral_constant<int, 1>{});
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
  const int v = Width(x.dtype(), s.channels, {x.data()});
  const Grid grid = Reduction(s, v);
  float* partial = static_cast<float*>(
      Scratch(sizeof(float) * 2 * grid.blocks.x * s.groups * s.channels, kScratchReduce));
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data());
    WithWidth<T>(v, [&](auto width) {
      MomentsPartial<T, decltype(width)::value><<<grid.blocks, kBlock, 0, Stream()>>>(
          xp, s.rows, s.channels, grid.rows_per_chunk, partial);
    });
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

int64_t ReluMaskWords(const ChannelsLastGroups& s) {
  return s.groups * s.rows * ((s.channels + 31) / 32);
}

// The mask's words, or null; checked for size.
uint32_t* MaskBits(const ChannelsLastGroups& s, const Tensor& relu_mask) {
  if (relu_mask.empty()) return nullptr;
  MLPERF_CHECK(core::DTypeSize(relu_mask.dtype()) == 4 && relu_mask.numel() >= ReluMaskWords(s));
  return static_cast<uint32_t*>(relu_mask.data());
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
  const Grid grid = Pointwise(s, v);
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    WithWidth<T>(v, [&](auto width) {
      Normalize<T, decltype(width)::value><<<grid.blocks, kBlock, 0, Stream()>>>(
          static_cast<const T*>(x.data()), s.rows, s.channels, grid.rows_per_chunk, mean, inv_std,
          gamma, beta, residual.empty() ? nullptr : static_cast<const T*>(residual.data()), relu,
          static_cast<T*>(y.data()), bits);
    });
    CUDA_CHECK_LAUNCH();
  });
}

void ChannelsLastNormBackward(const ChannelsLastGroups& s, bool relu, const Tensor& x,
                              const Tensor& y, const Tensor& dy, const float* gamma,
                              const float* mean, const float* inv_std, const Tensor& dx,
                              float* dgamma, float* dbeta, const Tensor& addend,
                              const Tensor& relu_mask) {
  CheckShape(s, x);
  MLPERF_CHECK(dy.numel() == x.numel() && dx.numel() == x.numel() && dy.dtype() == x.dtype() &&
               dx.dtype() == x.dtype());
  MLPERF_CHECK(addend.empty() || (addend.numel() == x.numel() && addend.dtype() == x.dtype()));
  const uint32_t* bits = relu ? MaskBits(s, relu_mask) : nullptr;
  const bool reads_y = relu && bits == nullptr;
  MLPERF_CHECK(!reads_y || (y.numel() == x.numel() && y.dtype() == x.dtype()));
  const int v =
      Width(x.dtype(), s.channels,
            {x.data(), reads_y ? y.data() : nullptr, dy.data(), dx.data(), addend.data()});
  const Grid reduce = Reduction(s, v), apply = Pointwise(s, v);
  const int64_t gc = s.groups * s.channels;
  // [coefficients and parameter-gradient shares: 5 * groups * channels][partial sums]
  float* coef = static_cast<float*>(
      Scratch(sizeof(float) * (5 * gc + 2 * reduce.blocks.x * gc), kScratchReduce));
  float* partial = coef + 5 * gc;
  ByType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* xp = static_cast<const T*>(x.data());
    T* dyp = static_cast<T*>(dy.data());
    WithWidth<T>(v, [&](auto width) {
      BackwardPartial<T, decltype(width)::value><<<reduce.blocks, kBlock, 0, Stream()>>>(
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
    WithWidth<T>(v, [&](auto width) {
      BackwardApply<T, decltype(width)::value>
          <<<apply.blocks, kBlock, 0, Stream()>>>(xp, dyp, s.rows, s.channels, apply.rows_per_chunk,
                                                  mean, coef, static_cast<T*>(dx.data()));
    });
    CUDA_CHECK_LAUNCH();
  });
}

}  // namespace mlperf::cuda
