// What the CUDA twin tests share: Philox inputs, dtype rounding, layout
// transposes, device buffers converted to a dtype, and the comparison.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/dtype.h"
#include "reference/core/philox.h"
#include "reference/core/tensor.h"
#include "reference/kernels/cuda/context.h"

namespace mlperf::twin {

using core::DType;
using core::Layout;
using core::Shape;
using core::Tensor;
using Floats = std::vector<float>;

inline Floats Random(int64_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Floats v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = lo + (hi - lo) * core::PhiloxUniform(seed, 7, static_cast<uint64_t>(i));
  return v;
}

inline float RoundTo(float x, DType t) {
  if (t == DType::kBF16) return core::Bf16ToFloat(core::FloatToBf16(x));
  if (t == DType::kF16) return core::HalfToFloat(core::FloatToHalf(x));
  return x;
}

inline Floats Rounded(Floats v, DType t) {
  for (float& x : v) x = RoundTo(x, t);
  return v;
}

// [n, c, s] <-> [n, s, c].
inline Floats ToChannelsLast(const Floats& v, int64_t n, int64_t c) {
  const int64_t s = static_cast<int64_t>(v.size()) / (n * c);
  Floats out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t q = 0; q < s; ++q) out[(i * s + q) * c + j] = v[(i * c + j) * s + q];
  return out;
}
inline Floats FromChannelsLast(const Floats& v, int64_t n, int64_t c) {
  const int64_t s = static_cast<int64_t>(v.size()) / (n * c);
  Floats out(v.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t q = 0; q < s; ++q) out[(i * c + j) * s + q] = v[(i * s + q) * c + j];
  return out;
}

// Device memory holding a host vector converted to `dtype`; freed at scope end.
class Dev {
 public:
  Dev(const Floats& host, Shape shape, DType dtype = DType::kF32, Layout layout = Layout::kRowMajor)
      : shape_(shape), dtype_(dtype), layout_(layout), n_(host.size()) {
    EXPECT_EQ(static_cast<int64_t>(host.size()), shape.numel());
    std::vector<uint16_t> half;
    const void* src = host.data();
    if (dtype != DType::kF32) {
      half.resize(n_);
      for (size_t i = 0; i < n_; ++i)
        half[i] = dtype == DType::kBF16 ? core::FloatToBf16(host[i]) : core::FloatToHalf(host[i]);
      src = half.data();
    }
    Upload(src, n_ * core::DTypeSize(dtype));
  }
  Dev(const std::vector<int32_t>& host, Shape shape)
      : shape_(shape), dtype_(DType::kI32), n_(host.size()) {
    Upload(host.data(), n_ * sizeof(int32_t));
  }
  ~Dev() { cudaFree(ptr_); }
  Dev(const Dev&) = delete;

  Tensor t() const { return Tensor(ptr_, shape_, dtype_, core::Device::kCuda, layout_); }
  Floats Get() const {
    cuda::Synchronize();
    Floats out(n_);
    if (dtype_ == DType::kF32) {
      EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n_ * 4, cudaMemcpyDeviceToHost), cudaSuccess);
      return out;
    }
    std::vector<uint16_t> half(n_);
    EXPECT_EQ(cudaMemcpy(half.data(), ptr_, n_ * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (size_t i = 0; i < n_; ++i)
      out[i] = dtype_ == DType::kBF16 ? core::Bf16ToFloat(half[i]) : core::HalfToFloat(half[i]);
    return out;
  }
  // An int32 tensor's words.
  std::vector<uint32_t> Words() const {
    cuda::Synchronize();
    std::vector<uint32_t> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n_ * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void Upload(const void* src, size_t bytes) {
    EXPECT_EQ(cudaMalloc(&ptr_, bytes), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
  }
  void* ptr_ = nullptr;
  Shape shape_;
  DType dtype_;
  Layout layout_ = Layout::kRowMajor;
  size_t n_;
};

inline Tensor Host(Floats& v, Shape shape) { return Tensor(v.data(), shape, DType::kF32); }

// |gpu - cpu| <= tol * (1 + |cpu|), NaN and Inf in the same places.
inline void ExpectClose(const Floats& gpu, const Floats& cpu, double tol, const std::string& what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < gpu.size(); ++i) {
    const bool ok =
        std::isnan(gpu[i]) == std::isnan(cpu[i]) && std::isinf(gpu[i]) == std::isinf(cpu[i]) &&
        (!std::isfinite(cpu[i]) ? (std::isnan(cpu[i]) || gpu[i] == cpu[i])
                                : std::fabs(gpu[i] - cpu[i]) <= tol * (1.0 + std::fabs(cpu[i])));
    if (!ok && ++failures <= 5)
      ADD_FAILURE() << what << " element " << i << ": gpu " << gpu[i] << " cpu " << cpu[i];
  }
  EXPECT_EQ(failures, 0) << what;
}

inline double Tolerance(DType t) {
  return t == DType::kBF16 ? 1.5e-2 : t == DType::kF16 ? 3e-3 : 1e-4;
}

inline const char* Name(DType t) {
  return t == DType::kBF16 ? "bf16" : t == DType::kF16 ? "fp16" : "fp32";
}

}  // namespace mlperf::twin
