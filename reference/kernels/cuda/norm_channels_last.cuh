// The pieces the channels-last batch and instance norm kernels share
// (cuda/norm_channels_last.cu: statistics and normalisation;
// cuda/norm_channels_last_backward.cu): their block shape, vector loads,
// row walk, the ReLU mask's bits, partial sums and grids. Include only from
// those two files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/norm_channels_last.h"

namespace mlperf::cuda::channels_last {

using core::DType;
using core::Tensor;

// A block is 8 warps; each thread keeps V neighbouring channels and walks
// its block's chunk of rows, four rows per iteration so that four loads are
// in flight. A warp's lanes are L lanes of channels (L * V neighbours of a
// row) by 32 / L rows: V is 2 for 16-bit types where the channel count
// allows (a warp then reads 128 bytes of one row, as with fp32, L = 32),
// else 1; with the wide kernels (WideNormKernels) 8 for 16-bit types, 16
// bytes a lane, with L = 4, 8, 16 or 32 so that few lanes idle at 32, 64
// or 128 channels (3D U-Net's top level, ResNet's first stages). Each
// channel's sums are added in the same order for a given V and L.
constexpr int kLanes = 32, kRowsPerStep = 8, kUnroll = 4;
static_assert(kUnroll == 4, "the sums below are written out for four rows");

using detail::FromFloat;
using detail::ToFloat;

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
// Eight 16-bit elements as one 16-byte access (four pairs).
template <typename T, typename Two>
struct PackOfEight {
  __device__ __forceinline__ static void Load(const T* p, int64_t i, float* v) {
    const uint4 q = *reinterpret_cast<const uint4*>(p + i);
    const Two* h = reinterpret_cast<const Two*>(&q);
    for (int k = 0; k < 4; ++k) {
      v[2 * k] = ToFloat(h[k].x);
      v[2 * k + 1] = ToFloat(h[k].y);
    }
  }
  __device__ __forceinline__ static void Store(T* p, int64_t i, const float* v) {
    uint4 q;
    Two* h = reinterpret_cast<Two*>(&q);
    for (int k = 0; k < 4; ++k) {
      h[k].x = FromFloat<T>(v[2 * k]);
      h[k].y = FromFloat<T>(v[2 * k + 1]);
    }
    *reinterpret_cast<uint4*>(p + i) = q;
  }
};
template <>
struct Pack<__nv_bfloat16, 8> : PackOfEight<__nv_bfloat16, __nv_bfloat162> {};
template <>
struct Pack<__half, 8> : PackOfEight<__half, __half2> {};

// This thread's first channel.
template <int V, int L>
__device__ __forceinline__ int64_t FirstChannel() {
  return (blockIdx.y * static_cast<int64_t>(L) + threadIdx.x % L) * V;
}

// The rows a block's threads cover at once, and this thread's among them
// (its warp's 32 / L rows are neighbours).
template <int L>
constexpr int kRowsPerBlockStep = (kLanes / L) * kRowsPerStep;
template <int L>
__device__ __forceinline__ int RowInStep() {
  return static_cast<int>(threadIdx.y) * (kLanes / L) + static_cast<int>(threadIdx.x) / L;
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
// four(i[4], r[4]) (it loads all four before using them). With L = 32 the
// loop is the same for every lane of a warp.
template <int L, typename One, typename Four>
__device__ __forceinline__ void ForRows(Chunk k, int64_t base, int64_t channels, One one,
                                        Four four) {
  constexpr int64_t step = kRowsPerBlockStep<L>;
  int64_t r = k.begin + RowInStep<L>();
  for (; r + (kUnroll - 1) * step < k.end; r += kUnroll * step) {
    const int64_t rows[kUnroll] = {r, r + step, r + 2 * step, r + 3 * step};
    const int64_t i[kUnroll] = {base + rows[0] * channels, base + rows[1] * channels,
                                base + rows[2] * channels, base + rows[3] * channels};
    four(i, rows);
  }
  for (; r < k.end; r += step) one(base + r * channels, r);
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

// Stores the flags `on` of this lane's V channels from c0 for row `row`
// (counted over all groups) as mask bits. V = 8: the lane's byte of its
// word (c0 is a multiple of 8), live lanes only. V = 1 or 2: the warp's 32 *
// V channels are V whole words, and every lane of the warp must call it.
template <int V>
__device__ __forceinline__ void StoreMaskBits(const bool* on, int64_t row, int64_t channels,
                                              int64_t c0, uint32_t* bits) {
  const int64_t per_row = MaskWordsPerRow(channels), first = blockIdx.y * static_cast<int64_t>(V);
  if constexpr (V == 8) {
    uint32_t byte = 0;
    for (int j = 0; j < 8; ++j) byte |= static_cast<uint32_t>(on[j]) << j;
    if (c0 < channels)
      reinterpret_cast<uint8_t*>(bits)[row * per_row * 4 + c0 / 8] = static_cast<uint8_t>(byte);
  } else {
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
}

// This lane's V flags of row `row` from the mask bits.
template <int V>
__device__ __forceinline__ void LoadMaskBits(const uint32_t* bits, int64_t row, int64_t channels,
                                             int64_t c0, bool* on) {
  const uint32_t* words = bits + row * MaskWordsPerRow(channels);
  if constexpr (V == 8) {  // one word holds all eight
    const uint32_t w = words[c0 / 32] >> (c0 % 32);
    for (int j = 0; j < 8; ++j) on[j] = (w >> j) & 1u;
  } else {
    for (int j = 0; j < V; ++j) on[j] = (words[(c0 + j) / 32] >> ((c0 + j) % 32)) & 1u;
  }
}

// Adds the block's row-threads' (a, b) of each of channels c0.. c0 + V - 1
// in a fixed order (warps, then a warp's rows) and writes them to
// partial[((group * chunks + chunk) * 2 + {0, 1}) * C + c].
template <int V, int L>
__device__ __forceinline__ void WritePartial(const float* a, const float* b, int64_t c0,
                                             int64_t channels, float* partial) {
  __shared__ float sa[kRowsPerStep][kLanes * V], sb[kRowsPerStep][kLanes * V];
  for (int j = 0; j < V; ++j) {
    sa[threadIdx.y][threadIdx.x * V + j] = a[j];
    sb[threadIdx.y][threadIdx.x * V + j] = b[j];
  }
  __syncthreads();
  if (threadIdx.y != 0 || threadIdx.x >= L || c0 >= channels) return;
  float* p = partial + (static_cast<int64_t>(blockIdx.z) * gridDim.x + blockIdx.x) * 2 * channels;
  for (int j = 0; j < V; ++j) {
    float ta = 0.0f, tb = 0.0f;
    for (int i = 0; i < kRowsPerStep; ++i) {
      for (int row = 0; row < kLanes / L; ++row) {
        ta += sa[i][(row * L + threadIdx.x) * V + j];
        tb += sb[i][(row * L + threadIdx.x) * V + j];
      }
    }
    p[c0 + j] = ta;
    p[channels + c0 + j] = tb;
  }
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

// The grid of a pass over s: (chunks, channel blocks, groups), with chunks
// of rows_per_chunk rows. Reductions aim at about 1024 blocks (several per
// SM, few partial sums); pointwise passes at 256 rows per block.
struct Grid {
  dim3 blocks;
  int64_t rows_per_chunk;
};
inline Grid Reduction(const ChannelsLastGroups& s, int v, int lanes) {
  const int64_t cblocks = (s.channels + lanes * v - 1) / (lanes * v);
  const int64_t max_chunks = std::max<int64_t>(1, (s.rows + 63) / 64);
  const int64_t chunks =
      std::clamp<int64_t>(1024 / std::max<int64_t>(1, cblocks * s.groups), 1, max_chunks);
  const int64_t per = (s.rows + chunks - 1) / chunks;
  return {dim3(static_cast<unsigned>((s.rows + per - 1) / per), static_cast<unsigned>(cblocks),
               static_cast<unsigned>(s.groups)),
          per};
}
inline Grid Pointwise(const ChannelsLastGroups& s, int v, int lanes) {
  constexpr int64_t kRowsPerBlock = 256;
  return {dim3(static_cast<unsigned>((s.rows + kRowsPerBlock - 1) / kRowsPerBlock),
               static_cast<unsigned>((s.channels + lanes * v - 1) / (lanes * v)),
               static_cast<unsigned>(s.groups)),
          kRowsPerBlock};
}
inline const dim3 kBlock(kLanes, kRowsPerStep);

inline void CheckShape(const ChannelsLastGroups& s, const Tensor& t) {
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

// Channels per thread: with the wide kernels on, 8 for 16-bit activations
// whose channel count is a multiple of 8 in 16-byte aligned tensors; else 2
// for 16-bit activations whose rows start on a pair (an even channel count)
// in 4-byte aligned tensors; else 1.
inline int Width(DType t, int64_t channels, std::initializer_list<const void*> data) {
  const auto aligned = [&](uintptr_t bytes) {
    for (const void* p : data)
      if (reinterpret_cast<uintptr_t>(p) % bytes != 0) return false;
    return true;
  };
  if (core::DTypeSize(t) != 2 || channels % 2 != 0) return 1;
  if (WideNormKernels() && channels % 8 == 0 && aligned(16)) return 8;
  return aligned(4) ? 2 : 1;
}

// Lanes of channels per warp row for v channels a thread: 32 up to v = 2;
// for v = 8 the fewest of 4, 8, 16, 32 that cover the channels, so that 32,
// 64 or 128 channels keep the warp's lanes busy on 8, 4 or 2 rows.
inline int LanesPerRow(int v, int64_t channels) {
  if (v != 8) return kLanes;
  return channels <= 32 ? 4 : channels <= 64 ? 8 : channels <= 128 ? 16 : kLanes;
}

// Calls fn(std::integral_constant<int, V>{}, std::integral_constant<int, L>{})
// with V = v (2 and 8 only for 16-bit T) and L = LanesPerRow(v, channels).
template <typename T, typename Fn>
void WithWidth(int v, int64_t channels, Fn&& fn) {
  using L32 = std::integral_constant<int, kLanes>;
  if constexpr (sizeof(T) == 2) {
    if (v == 8) {
      using V8 = std::integral_constant<int, 8>;
      const int lanes = LanesPerRow(v, channels);
      if (lanes == 4) return fn(V8{}, std::integral_constant<int, 4>{});
      if (lanes == 8) return fn(V8{}, std::integral_constant<int, 8>{});
      if (lanes == 16) return fn(V8{}, std::integral_constant<int, 16>{});
      return fn(V8{}, L32{});
    }
    if (v == 2) return fn(std::integral_constant<int, 2>{}, L32{});
  }
  fn(std::integral_constant<int, 1>{}, L32{});
}

// The mask's words, or null; checked for size.
inline uint32_t* MaskBits(const ChannelsLastGroups& s, const Tensor& relu_mask) {
  if (relu_mask.empty()) return nullptr;
  MLPERF_CHECK(relu_mask.dtype() == core::DType::kI32);
  MLPERF_CHECK(relu_mask.numel() >= ReluMaskWords(s));
  return static_cast<uint32_t*>(relu_mask.data());
}

}  // namespace mlperf::cuda::channels_last
