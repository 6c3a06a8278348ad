// The device runtime as types: streams, events and pinned host memory. In
// builds without CUDA they exist and do nothing (a null stream, events that
// are passed at once, plain host memory), so code above ops:: is the same
// on both backends.
#pragma once

#include <cstddef>

namespace mlperf::ops {

// A device queue (a cudaStream_t); the null one is the legacy default
// stream. A handle: copies name the same queue.
class Stream {
 public:
  Stream() = default;
  explicit Stream(void* native) : native_(native) {}
  void* native() const { return native_; }
  bool operator==(const Stream&) const = default;

 private:
  void* native_ = nullptr;
};

// The stream every ops:: call of this thread is queued on.
Stream ComputeStream();

// Work queued on `waiter` from now on starts after everything queued on
// `signaler` so far (an event recorded on signaler; the host never waits).
void StreamWaitsFor(Stream waiter, Stream signaler);

// A stream of its own (e.g. for NCCL's collectives), destroyed with the
// object; a default-constructed one holds none (the null stream).
class OwnedStream {
 public:
  OwnedStream() = default;
  // A new non-blocking stream (the null one without CUDA).
  static OwnedStream NonBlocking();
  ~OwnedStream();
  OwnedStream(OwnedStream&& other) noexcept;
  OwnedStream& operator=(OwnedStream&& other) noexcept;
  OwnedStream(const OwnedStream&) = delete;
  OwnedStream& operator=(const OwnedStream&) = delete;
  Stream get() const { return stream_; }

 private:
  Stream stream_;
};

// A marker in this thread's ops stream: Record places it after everything
// queued so far, Wait blocks the host until the device has passed it (at
// once if never recorded).
class Event {
 public:
  Event();
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void Record();
  void Wait() const;

 private:
  void* native_ = nullptr;  // a cudaEvent_t
};

// Page-locked host memory, so that uploads run at full bus speed and
// asynchronously (plain host memory without CUDA or a device).
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  bool pinned_ = false;
};

}  // namespace mlperf::ops
