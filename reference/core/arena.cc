#include "reference/core/arena.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <utility>

#ifdef MLPERF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace mlperf::core {

Arena::Arena(Device device, size_t capacity_bytes, bool measuring)
    : device_(device), capacity_(AlignUp(capacity_bytes, kAlignment)), measuring_(measuring) {
  if (measuring_ || capacity_ == 0) return;
  if (device_ == Device::kCpu) {
    // A large arena asks for transparent huge pages (where the kernel grants
    // them only on request): fewer TLB misses when rows are read at random
    // (DLRM's embedding tables: 15-25% faster lookups, docs/BENCHMARKS.md).
    constexpr size_t kHugePage = size_t{2} << 20;
    const bool huge = capacity_ >= 16 * kHugePage;
    if (huge) capacity_ = AlignUp(capacity_, kHugePage);
    base_ = static_cast<char*>(std::aligned_alloc(huge ? kHugePage : kAlignment, capacity_));
    MLPERF_CHECK_MSG(base_ != nullptr, "host arena allocation failed");
    if (huge) ::madvise(base_, capacity_, MADV_HUGEPAGE);  // advice: failure changes nothing
  } else {
#ifdef MLPERF_HAVE_CUDA
    MLPERF_CHECK_MSG(cudaMalloc(reinterpret_cast<void**>(&base_), capacity_) == cudaSuccess,
                     "device arena allocation failed");
#else
    MLPERF_CHECK_MSG(false, "device arena requested in a build without CUDA");
#endif
  }
}

Arena::Arena(Arena&& o) noexcept
    : device_(o.device_),
      capacity_(o.capacity_),
      used_(o.used_),
      measuring_(o.measuring_),
      base_(std::exchange(o.base_, nullptr)) {}

Arena::~Arena() {
  if (base_ == nullptr) return;
  if (device_ == Device::kCpu) {
    std::free(base_);
  } else {
#ifdef MLPERF_HAVE_CUDA
    cudaFree(base_);
#endif
  }
}

Tensor Arena::Allocate(Shape shape, DType dtype, Layout layout) {
  const size_t bytes = AlignUp(static_cast<size_t>(shape.numel()) * DTypeSize(dtype), kAlignment);
  void* ptr = nullptr;
  if (!measuring_) {
    MLPERF_CHECK_MSG(used_ + bytes <= capacity_, "arena exhausted: size it with Arena::Measuring");
    ptr = base_ + used_;
  }
  used_ += bytes;
  return Tensor(ptr, shape, dtype, device_, layout);
}

Tensor Arena::AllocateZeroed(Shape shape, DType dtype, Layout layout) {
  Tensor t = Allocate(shape, dtype, layout);
  if (measuring_ || t.bytes() == 0) return t;
  if (device_ == Device::kCpu) {
    std::memset(t.data(), 0, t.bytes());
  } else {
#ifdef MLPERF_HAVE_CUDA
    // Set-up time only: a synchronous memset keeps this free of any stream.
    MLPERF_CHECK_MSG(cudaMemset(t.data(), 0, t.bytes()) == cudaSuccess &&
                         cudaDeviceSynchronize() == cudaSuccess,
                     "device arena memset failed");
#endif
  }
  return t;
}

}  // namespace mlperf::core
