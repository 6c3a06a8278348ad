#include "reference/kernels/dispatch.h"

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "reference/core/dtype.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/dispatch_backend.h"
#include "reference/kernels/precision.h"
#include "reference/kernels/precision_operands.h"

#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/elementwise.h"
#endif

namespace mlperf::ops {

#ifndef MLPERF_HAVE_CUDA
namespace detail {
[[noreturn]] void NoCuda(const char* call) {
  std::fprintf(stderr, "ops::%s: device tensor in a build without CUDA\n", call);
  std::abort();
}
}  // namespace detail
#endif

using core::Device;
using core::Tensor;
using detail::OnDevice;

bool CudaAvailable() {
#ifdef MLPERF_HAVE_CUDA
  return cuda::DeviceAvailable();
#else
  return false;
#endif
}

int64_t ConvWorkspaceElements(const ConvGeometry& g, core::Layout layout, Device device) {
  if (device == Device::kCuda) {
#ifdef MLPERF_HAVE_CUDA
    return cuda::ConvWorkspaceElements(g, layout);
#else
    detail::NoCuda("ConvWorkspaceElements");
#endif
  }
  return cpu::ConvWorkspaceElements(g, layout);
}

void Accumulate(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) return MLPERF_CUDA_TWIN(Accumulate(x, y));
  cpu::Accumulate(x, y);
}

void AccumulateStored(const Tensor& x, const Tensor& y) {
  if (OnDevice(x, {&y})) {
    MLPERF_CUDA_TWIN(Accumulate(x, y));
    return RoundStored(y);
  }
  cpu::Accumulate(x, y, StoredRounding(y));
}

// The bias is an input of its convolution and the sum that convolution's
// output (precision.h): under bf16/fp16 y = round(round(conv) + round(b)), as
// PyTorch's autocast adds a cuDNN convolution's bias, and db is rounded.
void BiasAddChannels(const Tensor& bias, const Tensor& y) {
  const Tensor rb = RoundedOperand(bias, 0);
  if (OnDevice(y, {&bias})) {
    MLPERF_CUDA_TWIN(BiasAddChannels(rb, y));  // stores a typed y rounded
    return RoundOutput(y);
  }
  cpu::BiasAddChannels(rb, y, StoredRounding(y));
}

void BiasBackwardChannels(const Tensor& dy, const Tensor& dbias) {
  if (OnDevice(dy, {&dbias})) {
    MLPERF_CUDA_TWIN(BiasBackwardChannels(dy, dbias));
  } else {
    cpu::BiasBackwardChannels(dy, dbias);
  }
  RoundOutput(dbias);
}

void CopyBytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::kCpu && src_device == Device::kCpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef MLPERF_HAVE_CUDA
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cuda::Stream()));
  if (dst_device == Device::kCpu) cuda::Synchronize();
#else
  MLPERF_CHECK_MSG(false, "ops::CopyBytes: device memory in a build without CUDA");
#endif
}

namespace {
int g_copy_threads = 0;
}  // namespace

void ParallelHostCopy(void* dst, const void* src, size_t bytes) {
  constexpr size_t kBlock = size_t{1} << 20;
  const int64_t blocks = static_cast<int64_t>((bytes + kBlock - 1) / kBlock);
  const int threads = g_copy_threads > 0 ? g_copy_threads : omp_get_max_threads();
#pragma omp parallel for schedule(static) num_threads(threads) if (blocks >= 8)
  for (int64_t b = 0; b < blocks; ++b) {
    const size_t at = static_cast<size_t>(b) * kBlock;
    std::memcpy(static_cast<char*>(dst) + at, static_cast<const char*>(src) + at,
                std::min(kBlock, bytes - at));
  }
}

std::vector<float> ToHostFloats(const Tensor& t) {
  std::vector<float> host(static_cast<size_t>(t.numel()));
  if (t.dtype() == core::DType::kF32) {
    CopyBytes(host.data(), Device::kCpu, t.data(), t.device(), t.bytes());
    return host;
  }
  MLPERF_CHECK(t.dtype() == core::DType::kBF16 || t.dtype() == core::DType::kF16);
  std::vector<uint16_t> half(host.size());
  CopyBytes(half.data(), Device::kCpu, t.data(), t.device(), t.bytes());
  for (size_t i = 0; i < half.size(); ++i)
    host[i] =
        t.dtype() == core::DType::kBF16 ? core::Bf16ToFloat(half[i]) : core::HalfToFloat(half[i]);
  return host;
}

void Copy(const Tensor& src, const Tensor& dst) {
  MLPERF_CHECK(src.bytes() == dst.bytes());
  CopyBytes(dst.data(), dst.device(), src.data(), src.device(), src.bytes());
}

void ZeroBytes(void* dst, Device device, size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::kCpu) {
    std::memset(dst, 0, bytes);
    return;
  }
#ifdef MLPERF_HAVE_CUDA
  CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, cuda::Stream()));
#else
  MLPERF_CHECK_MSG(false, "ops::ZeroBytes: device memory in a build without CUDA");
#endif
}

void Synchronize(Device device) {
  if (device == Device::kCpu) return;
#ifdef MLPERF_HAVE_CUDA
  cuda::Synchronize();
#endif
}

void SetHostThreads(int threads) { cpu::SetComputeThreads(threads); }
void SetHostCopyThreads(int threads) { g_copy_threads = threads; }

int64_t DeviceMemoryInUseBytes() {
#ifdef MLPERF_HAVE_CUDA
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<int64_t>(total_bytes - free_bytes);
#else
  return 0;
#endif
}

int64_t DeviceMemoryTotalBytes() {
#ifdef MLPERF_HAVE_CUDA
  if (!CudaAvailable()) return 0;
  size_t free_bytes = 0, total_bytes = 0;
  CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return static_cast<int64_t>(total_bytes);
#else
  return 0;
#endif
}

void SelectDevice(int local_rank) {
#ifdef MLPERF_HAVE_CUDA
  int count = 0;
  CUDA_CHECK(cudaGetDeviceCount(&count));
  MLPERF_CHECK_MSG(count > 0, "ops::SelectDevice: no CUDA device");
  CUDA_CHECK(cudaSetDevice(local_rank % count));
#else
  (void)local_rank;
#endif
}

}  // namespace mlperf::ops
