// One allocation per arena, made before training starts; tensors are carved
// out of it in order. A measuring arena (no memory) runs the same allocation
// sequence first to learn the size, so a model states its layout once.
#pragma once

#include <cstddef>

#include "base/check.h"
#include "reference/core/tensor.h"

namespace mlperf::core {

class Arena {
 public:
  // Tensors start on this boundary: enough for AVX-512 and for the 256-byte
  // alignment cuBLAS/cuDNN prefer.
  static constexpr size_t kAlignment = 256;

  // A measuring arena: Allocate returns tensors without memory and counts bytes.
  static Arena Measuring(Device device = Device::kCpu) { return Arena(device, 0, true); }
  Arena(Device device, size_t capacity_bytes) : Arena(device, capacity_bytes, false) {}
  ~Arena();
  Arena(Arena&& other) noexcept;
  Arena& operator=(Arena&&) = delete;
  Arena(const Arena&) = delete;

  Tensor Allocate(Shape shape, DType dtype = DType::kF32, Layout layout = Layout::kRowMajor);
  // Zero-filled variant. On a device it waits for the fill: for set-up only.
  Tensor AllocateZeroed(Shape shape, DType dtype = DType::kF32, Layout layout = Layout::kRowMajor);

  size_t used() const { return used_; }
  size_t capacity() const { return capacity_; }
  Device device() const { return device_; }
  bool measuring() const { return measuring_; }
  void* base() const { return base_; }
  // Frees every tensor at once (e.g. per-step scratch); the memory stays.
  void Reset() { used_ = 0; }
  // Tensors that may share memory (activations rebuilt when needed): carve
  // one set, note where it ends, MoveTo(start) and carve the next over the
  // same bytes; then MoveTo(the furthest end) before carving on. The same
  // calls size a measuring arena right.
  void MoveTo(size_t used) {
    MLPERF_CHECK_MSG(measuring_ || used <= capacity_,
                     "arena exhausted: size it with Arena::Measuring");
    used_ = used;
  }

 private:
  Arena(Device device, size_t capacity_bytes, bool measuring);

  Device device_;
  size_t capacity_ = 0;
  size_t used_ = 0;
  bool measuring_ = false;
  char* base_ = nullptr;
};

inline size_t AlignUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace mlperf::core
