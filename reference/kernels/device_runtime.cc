#include "reference/kernels/device_runtime.h"

#include <cstdlib>
#include <utility>

#include "base/check.h"
#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#endif

namespace mlperf::ops {

#ifdef MLPERF_HAVE_CUDA
namespace {
cudaStream_t Native(Stream s) { return static_cast<cudaStream_t>(s.native()); }
}  // namespace
#endif

Stream ComputeStream() {
#ifdef MLPERF_HAVE_CUDA
  return Stream(cuda::Stream());
#else
  return Stream();
#endif
}

void StreamWaitsFor(Stream waiter, Stream signaler) {
#ifdef MLPERF_HAVE_CUDA
  if (waiter == signaler) return;
  // One event per thread is enough: a wait captures the event's state when
  // it is queued, so re-recording afterwards cannot affect it.
  thread_local cudaEvent_t event = [] {
    cudaEvent_t e = nullptr;
    CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    return e;
  }();
  CUDA_CHECK(cudaEventRecord(event, Native(signaler)));
  CUDA_CHECK(cudaStreamWaitEvent(Native(waiter), event, 0));
#else
  (void)waiter;
  (void)signaler;
#endif
}

OwnedStream OwnedStream::NonBlocking() {
  OwnedStream owned;
#ifdef MLPERF_HAVE_CUDA
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  owned.stream_ = Stream(stream);
#endif
  return owned;
}

OwnedStream::~OwnedStream() {
#ifdef MLPERF_HAVE_CUDA
  if (stream_.native() != nullptr) CUDA_CHECK(cudaStreamDestroy(Native(stream_)));
#endif
}

OwnedStream::OwnedStream(OwnedStream&& other) noexcept
    : stream_(std::exchange(other.stream_, Stream())) {}

OwnedStream& OwnedStream::operator=(OwnedStream&& other) noexcept {
  std::swap(stream_, other.stream_);
  return *this;
}

Event::Event() {
#ifdef MLPERF_HAVE_CUDA
  if (!cuda::DeviceAvailable()) return;
  cudaEvent_t event = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
  native_ = event;
#endif
}

Event::~Event() {
#ifdef MLPERF_HAVE_CUDA
  if (native_ != nullptr) CUDA_CHECK(cudaEventDestroy(static_cast<cudaEvent_t>(native_)));
#endif
}

void Event::Record() {
#ifdef MLPERF_HAVE_CUDA
  if (native_ != nullptr)
    CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(native_), cuda::Stream()));
#endif
}

void Event::Wait() const {
#ifdef MLPERF_HAVE_CUDA
  if (native_ != nullptr) CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(native_)));
#endif
}

PinnedBuffer::PinnedBuffer(size_t bytes) : size_(bytes) {
#ifdef MLPERF_HAVE_CUDA
  if (cuda::DeviceAvailable()) {
    void* p = nullptr;
    CUDA_CHECK(cudaMallocHost(&p, bytes));
    data_ = static_cast<char*>(p);
    pinned_ = true;
    return;
  }
#endif
  data_ = static_cast<char*>(std::malloc(bytes));
  MLPERF_CHECK_MSG(data_ != nullptr || bytes == 0, "host allocation failed");
}

PinnedBuffer::~PinnedBuffer() {
#ifdef MLPERF_HAVE_CUDA
  if (pinned_) {
    CUDA_CHECK(cudaFreeHost(data_));
    return;
  }
#endif
  std::free(data_);
}

}  // namespace mlperf::ops
