// Helpers shared by the core and model tests: host buffers that hand out
// Tensors, seeded random fills, the central-difference gradient check, and
// the whole-vector relative error the device-against-host tests use, per
// parameter too.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "reference/core/philox.h"
#include "reference/core/tensor.h"
#include "reference/kernels/optimizer_params.h"

namespace mlperf::testing {

// Owns fp32 (or int32) host memory for tests; tests may allocate freely.
struct Buffer {
  std::vector<float> data;
  core::Shape shape;
  explicit Buffer(core::Shape s, float fill = 0.0f) : data(s.numel(), fill), shape(s) {}
  core::Tensor t() { return core::Tensor(data.data(), shape, core::DType::kF32); }
  float& operator[](int64_t i) { return data[i]; }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
};

struct IntBuffer {
  std::vector<int32_t> data;
  core::Shape shape;
  explicit IntBuffer(core::Shape s) : data(s.numel(), 0), shape(s) {}
  core::Tensor t() { return core::Tensor(data.data(), shape, core::DType::kI32); }
};

// Uniform in [lo, hi) from Philox stream (seed, 0).
inline void FillRandom(Buffer& b, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  for (int64_t i = 0; i < b.size(); ++i)
    b[i] = lo + (hi - lo) * core::PhiloxUniform(seed, 0, static_cast<uint64_t>(i));
}

inline double Dot(const Buffer& a, const Buffer& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.data.size(); ++i) s += static_cast<double>(a.data[i]) * b.data[i];
  return s;
}

// Compares `analytic` with central differences (L(x+h) - L(x-h)) / 2h of the
// scalar `loss` with respect to every element of `x`, which loss() reads.
inline void ExpectGradientMatches(Buffer& x, const std::vector<float>& analytic,
                                  const std::function<double()>& loss, double h = 1e-2,
                                  double tol = 2e-3, const char* what = "") {
  ASSERT_EQ(static_cast<size_t>(x.size()), analytic.size()) << what;
  int failures = 0;
  for (int64_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    x[i] = saved + static_cast<float>(h);
    const double up = loss();
    x[i] = saved - static_cast<float>(h);
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * h);
    const double err = std::fabs(numeric - analytic[i]);
    if (err > tol * (1.0 + std::fabs(numeric)) && ++failures <= 5) {
      ADD_FAILURE() << what << " element " << i << ": analytic " << analytic[i] << " numeric "
                    << numeric;
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

// ||a - b|| / ||b|| over whole vectors (a relative error that is not fooled
// by single tiny elements).
inline double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double diff = 0.0, norm = 0.0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    norm += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / std::max(norm, 1e-30));
}

// One parameter's elements out of the flat vector of all of them.
inline std::vector<float> SliceOf(const std::vector<float>& flat, const TensorSlice& s) {
  return {flat.begin() + s.offset, flat.begin() + s.offset + s.numel};
}

// Each parameter's gradient in `got` within `per_parameter` of `want` (the
// relative error above, the parameter named on failure), and all of them
// together within `overall`.
inline void ExpectGradientsClose(const std::vector<float>& got, const std::vector<float>& want,
                                 const std::vector<TensorSlice>& slices,
                                 const std::vector<std::string>& names, double per_parameter,
                                 double overall) {
  ASSERT_EQ(slices.size(), names.size());
  for (size_t k = 0; k < slices.size(); ++k)
    EXPECT_LT(RelativeError(SliceOf(got, slices[k]), SliceOf(want, slices[k])), per_parameter)
        << names[k];
  EXPECT_LT(RelativeError(got, want), overall);
}

}  // namespace mlperf::testing
