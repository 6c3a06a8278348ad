#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv_channel_pad.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/fast_div.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Layout;
using core::Tensor;

constexpr int64_t kMultiple = 8;  // 16 bytes of bf16/fp16

bool g_pad_channels = std::getenv("MLPERF_CONV_PAD_CHANNELS") != nullptr &&
                      std::string_view(std::getenv("MLPERF_CONV_PAD_CHANNELS")) == "1";

// dst[n, s, c'] (channels-last, `padded` channels) = src(n, c', s) below
// src's channel count, else zero; D divides dst's flat index.
template <typename D>
__global__ void PadKernel(const uint16_t* src, detail::ActivationView from, uint16_t* dst,
                          D by_padded, D by_spatial, int64_t count) {
  const int64_t padded = by_padded.divisor(), spatial = by_spatial.divisor();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t q = by_padded.Div(i), c = i - q * padded;
    const int64_t n = by_spatial.Div(q), s = q - n * spatial;
    dst[i] = c < from.channels ? src[from.Offset(n, c, s)] : uint16_t{0};
  }
}

// dst(n, c, s) = src[n, s, c] (channels-last, `padded` channels) for dst's
// channels; D divides the flat index over dst's channels-last order.
template <typename D>
__global__ void CropKernel(const uint16_t* src, int64_t padded, uint16_t* dst,
                           detail::ActivationView to, D by_channels, D by_spatial, int64_t count) {
  const int64_t channels = by_channels.divisor(), spatial = by_spatial.divisor();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t q = by_channels.Div(i), c = i - q * channels;
    const int64_t n = by_spatial.Div(q), s = q - n * spatial;
    dst[to.Offset(n, c, s)] = src[q * padded + c];
  }
}

}  // namespace

void SetConvPadChannels(bool on) { g_pad_channels = on; }
bool ConvPadChannels() { return g_pad_channels; }

bool PadsChannels(const ConvGeometry& g, const Tensor& x) {
  return g_pad_channels && detail::ChannelsLast(x) && core::DTypeSize(x.dtype()) == 2 &&
         g.in_channels % kMultiple != 0;
}

ConvGeometry WithPaddedChannels(const ConvGeometry& g) {
  ConvGeometry padded = g;
  padded.in_channels = (g.in_channels + kMultiple - 1) / kMultiple * kMultiple;
  return padded;
}

Tensor PaddedChannelsLike(const Tensor& like, int64_t channels, int slot) {
  const detail::ActivationView v = detail::ViewOf(like);
  const int rank = like.shape().rank();
  MLPERF_CHECK_MSG(rank == 4 || rank == 5, "conv: operands are 4-D or 5-D");
  MLPERF_CHECK(core::DTypeSize(like.dtype()) == 2 && channels >= v.channels);
  // The spatial extents in order, from either layout.
  const int first = v.channels_last ? 1 : 2;
  core::Shape shape = rank == 4
                          ? core::Shape{like.dim(0), like.dim(first), like.dim(first + 1), channels}
                          : core::Shape{like.dim(0), like.dim(first), like.dim(first + 1),
                                        like.dim(first + 2), channels};
  const size_t bytes = static_cast<size_t>(shape.numel()) * 2;
  return Tensor(Scratch(bytes, slot), shape, like.dtype(), core::Device::kCuda,
                rank == 4 ? Layout::kNHWC : Layout::kNDHWC);
}

Tensor PaddedChannels(const Tensor& t, int64_t channels, int slot) {
  const Tensor padded = PaddedChannelsLike(t, channels, slot);
  const detail::ActivationView from = detail::ViewOf(t);
  const int64_t count = padded.numel();
  if (count == 0) return padded;
  WithDivider(count, [&](auto tag) {
    using D = decltype(tag);
    PadKernel<<<Blocks(count), 256, 0, Stream()>>>(static_cast<const uint16_t*>(t.data()), from,
                                                   static_cast<uint16_t*>(padded.data()),
                                                   D(channels), D(from.spatial), count);
  });
  CUDA_CHECK_LAUNCH();
  return padded;
}

void CropChannels(const Tensor& padded, const Tensor& dst) {
  const detail::ActivationView to = detail::ViewOf(dst);
  const int64_t padded_channels = padded.dim(padded.shape().rank() - 1);
  MLPERF_CHECK(padded.dtype() == dst.dtype() && padded_channels >= to.channels &&
               padded.numel() / padded_channels == dst.numel() / to.channels);
  const int64_t count = dst.numel();
  if (count == 0) return;
  WithDivider(count, [&](auto tag) {
    using D = decltype(tag);
    CropKernel<<<Blocks(count), 256, 0, Stream()>>>(
        static_cast<const uint16_t*>(padded.data()), padded_channels,
        static_cast<uint16_t*>(dst.data()), to, D(to.channels), D(to.spatial), count);
  });
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlperf::cuda
