// Device helpers shared by the CUDA twins (include only from .cu files):
// dtype-dispatched loads/stores with fp32 arithmetic, block reductions, and
// the logical (n, c, spatial) view of an activation in either layout.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cuda::detail {

__device__ __forceinline__ float LoadAs(const void* p, core::DType t, int64_t i) {
  switch (t) {
    case core::DType::kBF16:
      return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case core::DType::kF16:
      return __half2float(static_cast<const __half*>(p)[i]);
    default:
      return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void StoreAs(void* p, core::DType t, int64_t i, float v) {
  switch (t) {
    case core::DType::kBF16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
      return;
    case core::DType::kF16:
      static_cast<__half*>(p)[i] = __float2half_rn(v);
      return;
    default:
      static_cast<float*>(p)[i] = v;
      return;
  }
}

// The same conversions for a type known at compile time.
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

// Sum over a block of kThreads threads (a multiple of 32); every thread gets
// the result. Safe to call repeatedly in one kernel.
template <int kThreads>
__device__ float BlockSum(float v) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float s = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) s += partial[w];
  __syncthreads();
  return s;
}

template <int kThreads>
__device__ float BlockMax(float v) {
  __shared__ float partial[kThreads / 32];
  for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
  __syncthreads();
  float m = -FLT_MAX;
  for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, partial[w]);
  __syncthreads();
  return m;
}

// An activation [N, C, spatial] (channels first) or [N, spatial, C]
// (channels last): the memory offset of logical element (n, c, s).
struct ActivationView {
  int64_t channels = 1;
  int64_t spatial = 1;
  bool channels_last = false;
  __host__ __device__ int64_t Offset(int64_t n, int64_t c, int64_t s) const {
    return channels_last ? (n * spatial + s) * channels + c : (n * channels + c) * spatial + s;
  }
};

inline bool ChannelsLast(const core::Tensor& t) {
  return t.layout() == core::Layout::kNHWC || t.layout() == core::Layout::kNDHWC;
}

// The view of `t` read as [dim 0, channels, rest]; channels are the last
// dimension for an NHWC/NDHWC tag and dimension 1 otherwise.
inline ActivationView ViewOf(const core::Tensor& t) {
  ActivationView v;
  v.channels_last = ChannelsLast(t);
  v.channels = v.channels_last ? t.dim(t.shape().rank() - 1) : t.dim(1);
  v.spatial = t.numel() / (t.dim(0) * v.channels);
  return v;
}

}  // namespace mlperf::cuda::detail
