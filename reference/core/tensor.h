// A Tensor is a non-owning view: shape, element type, layout and device over
// memory that an Arena owns. Copying a Tensor copies the view, not the data.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "base/check.h"
#include "reference/core/dtype.h"

namespace mlperf::core {

enum class Device : uint8_t { kCpu, kCuda };

// Layout only matters for activations of convolutional models; everything else
// is kRowMajor (last dimension contiguous).
enum class Layout : uint8_t { kRowMajor, kNCHW, kNHWC, kNCDHW, kNDHWC };

class Shape {
 public:
  static constexpr int kMaxRank = 6;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) {
    MLPERF_CHECK(dims.size() <= kMaxRank);
    for (int64_t d : dims) dims_[rank_++] = d;
  }
  int rank() const { return rank_; }
  int64_t operator[](int i) const { return dims_[i]; }
  // This shape with dimension i set to `value`.
  Shape With(int i, int64_t value) const {
    MLPERF_CHECK(i >= 0 && i < rank_);
    Shape s = *this;
    s.dims_[i] = value;
    return s;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) n *= dims_[i];
    return n;
  }
  bool operator==(const Shape& o) const {
    if (rank_ != o.rank_) return false;
    for (int i = 0; i < rank_; ++i)
      if (dims_[i] != o.dims_[i]) return false;
    return true;
  }
  std::string ToString() const;

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(void* data, Shape shape, DType dtype, Device device = Device::kCpu,
         Layout layout = Layout::kRowMajor)
      : data_(data), shape_(shape), dtype_(dtype), device_(device), layout_(layout) {}

  void* data() const { return data_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(data_);
  }
  float* f32() const {
    MLPERF_CHECK(dtype_ == DType::kF32);
    return static_cast<float*>(data_);
  }
  const Shape& shape() const { return shape_; }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t numel() const { return shape_.numel(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * DTypeSize(dtype_); }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  Layout layout() const { return layout_; }
  bool empty() const { return data_ == nullptr; }

  // Same memory, another shape with the same number of elements.
  Tensor Reshaped(Shape shape, Layout layout = Layout::kRowMajor) const {
    MLPERF_CHECK(shape.numel() == numel());
    return Tensor(data_, shape, dtype_, device_, layout);
  }

 private:
  void* data_ = nullptr;
  Shape shape_;
  DType dtype_ = DType::kF32;
  Device device_ = Device::kCpu;
  Layout layout_ = Layout::kRowMajor;
};

}  // namespace mlperf::core
