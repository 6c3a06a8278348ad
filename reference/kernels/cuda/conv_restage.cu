#include "base/check.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv_restage.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/fast_div.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Layout;
using core::Tensor;

// D divides the destination index (kernels/fast_div.h): FastDiv below 2^31
// elements, WideDiv beyond.
template <typename D>
__global__ void RestageKernel(const void* src, DType src_type, detail::ActivationView from,
                              void* dst, DType dst_type, bool to_channels_last, D by_channels,
                              D by_spatial, int64_t count) {
  const int64_t channels = by_channels.divisor(), spatial = by_spatial.divisor();
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int64_t n, c, s;
    if (to_channels_last) {
      const int64_t q = by_channels.Div(i);
      c = i - q * channels;
      n = by_spatial.Div(q);
      s = q - n * spatial;
    } else {
      const int64_t q = by_spatial.Div(i);
      s = i - q * spatial;
      n = by_channels.Div(q);
      c = q - n * channels;
    }
    detail::StoreAs(dst, dst_type, i, detail::LoadAs(src, src_type, from.Offset(n, c, s)));
  }
}

}  // namespace

bool IsVolume(const Tensor& t) {
  return t.layout() == Layout::kNCDHW || t.layout() == Layout::kNDHWC || t.shape().rank() == 5;
}

Tensor StagedLike(const Tensor& t, DType dtype, bool channels_last, int slot) {
  const detail::ActivationView v = detail::ViewOf(t);
  const int rank = t.shape().rank();
  MLPERF_CHECK_MSG(rank == 4 || rank == 5, "conv: operands are 4-D or 5-D");
  const int first = v.channels_last ? 1 : 2;  // the first spatial dimension
  const int64_t a = t.dim(first), b = t.dim(first + 1), n = t.dim(0), c = v.channels;
  core::Shape shape;
  if (rank == 4) {
    shape = channels_last ? core::Shape{n, a, b, c} : core::Shape{n, c, a, b};
  } else {
    const int64_t d = t.dim(first + 2);
    shape = channels_last ? core::Shape{n, a, b, d, c} : core::Shape{n, c, a, b, d};
  }
  const bool three_d = IsVolume(t);
  const Layout layout = channels_last ? (three_d ? Layout::kNDHWC : Layout::kNHWC)
                                      : (three_d ? Layout::kNCDHW : Layout::kNCHW);
  void* data = Scratch(static_cast<size_t>(t.numel()) * core::DTypeSize(dtype), slot);
  return Tensor(data, shape, dtype, core::Device::kCuda, layout);
}

void CopyStaged(const Tensor& src, const Tensor& dst) {
  MLPERF_CHECK(src.numel() == dst.numel());
  const detail::ActivationView to = detail::ViewOf(dst);
  WithDivider(dst.numel(), [&](auto tag) {
    using D = decltype(tag);
    RestageKernel<<<Blocks(dst.numel()), 256, 0, Stream()>>>(
        src.data(), src.dtype(), detail::ViewOf(src), dst.data(), dst.dtype(), to.channels_last,
        D(to.channels), D(to.spatial), dst.numel());
  });
  CUDA_CHECK_LAUNCH();
}

Tensor Restaged(const Tensor& t, DType dtype, bool channels_last, int slot) {
  const Tensor staged = StagedLike(t, dtype, channels_last, slot);
  CopyStaged(t, staged);
  return staged;
}

}  // namespace mlperf::cuda
