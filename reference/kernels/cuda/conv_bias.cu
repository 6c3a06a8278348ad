// The per-channel bias of a convolution's output and its gradient
// (cuda/conv.h), in either layout and any float type.
#include <algorithm>
#include <cstdint>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/linear.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Tensor;

__global__ void AddBiasKernel(const float* bias, void* y, DType t, int64_t count,
                              detail::ActivationView v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = v.channels_last ? i % v.channels : (i / v.spatial) % v.channels;
    detail::StoreAs(y, t, i, detail::LoadAs(y, t, i) + bias[c]);
  }
}

constexpr int kThreads = 256;

// Channels-first bias gradient, first pass: block (part, channel, sample)
// sums its part of one contiguous plane into partial[sample][part][channel].
__global__ void BiasGradPlaneParts(const void* dy, DType t, int64_t channels, int64_t spatial,
                                   int64_t per, float* partial) {
  const int64_t part = blockIdx.x, c = blockIdx.y, n = blockIdx.z;
  const int64_t begin = part * per, end = begin + per < spatial ? begin + per : spatial;
  const int64_t plane = (n * channels + c) * spatial;
  float sum = 0.0f;
  for (int64_t s = begin + threadIdx.x; s < end; s += kThreads)
    sum += detail::LoadAs(dy, t, plane + s);
  sum = detail::BlockSum<kThreads>(sum);
  if (threadIdx.x == 0) partial[(n * gridDim.x + part) * channels + c] = sum;
}

}  // namespace

void BiasAddChannels(const Tensor& bias, const Tensor& y) {
  const detail::ActivationView v = detail::ViewOf(y);
  MLPERF_CHECK(bias.numel() == v.channels);
  AddBiasKernel<<<Blocks(y.numel()), 256, 0, Stream()>>>(bias.f32(), y.data(), y.dtype(), y.numel(),
                                                         v);
  CUDA_CHECK_LAUNCH();
}

void BiasBackwardChannels(const Tensor& dy, const Tensor& dbias) {
  const detail::ActivationView v = detail::ViewOf(dy);
  MLPERF_CHECK(dbias.numel() == v.channels);
  // Channels-last: rows of channels, like a dense layer's gradient (one
  // block per channel would read it strided, with a handful of blocks).
  if (v.channels_last) return BiasGradient(dy, dbias.f32(), dy.numel() / v.channels, v.channels);
  // Channels-first: enough parts per plane for about 2048 blocks, each part
  // summed by a block, then the parts per channel as rows, in a fixed order.
  const int64_t n = dy.dim(0), planes = n * v.channels;
  MLPERF_CHECK(v.channels <= 65535 && n <= 65535);
  const int64_t parts = std::clamp<int64_t>((2048 + planes - 1) / planes, 1,
                                            (v.spatial + 4 * kThreads - 1) / (4 * kThreads));
  const int64_t per = (v.spatial + parts - 1) / parts;
  // The workspace slot: no convolution is in flight inside this op.
  float* partial = static_cast<float*>(
      Scratch(static_cast<size_t>(planes * parts) * sizeof(float), kScratchWorkspace));
  const dim3 grid(static_cast<unsigned>(parts), static_cast<unsigned>(v.channels),
                  static_cast<unsigned>(n));
  BiasGradPlaneParts<<<grid, kThreads, 0, Stream()>>>(dy.data(), dy.dtype(), v.channels, v.spatial,
                                                      per, partial);
  CUDA_CHECK_LAUNCH();
  BiasGradient(Tensor(partial, {n * parts, v.channels}, DType::kF32, core::Device::kCuda),
               dbias.f32(), n * parts, v.channels);
}

}  // namespace mlperf::cuda
