// CPU kernels of ops/detection.h.
#include "reference/kernels/ops/detection.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "base/check.h"
#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {
namespace {

using core::Tensor;

// The source index of output index `i` (PyTorch's nearest_idx).
int64_t NearestSource(int64_t i, int64_t in, int64_t out) {
  if (out == in) return i;
  if (out == 2 * in) return i >> 1;
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const auto src = static_cast<int64_t>(std::floor(static_cast<float>(i) * scale));
  return src < in - 1 ? src : in - 1;
}

void CheckPair(const Tensor& x, const Tensor& y) {
  MLPERF_CHECK(x.shape().rank() == 4 && y.shape().rank() == 4);
  MLPERF_CHECK(x.dim(0) == y.dim(0) && x.dim(1) == y.dim(1));
  MLPERF_CHECK(x.dtype() == core::DType::kF32 && y.dtype() == core::DType::kF32);
}

void UpsampleNearest(const Tensor& x, const Tensor& y) {
  CheckPair(x, y);
  const int64_t planes = x.dim(0) * x.dim(1), ih = x.dim(2), iw = x.dim(3), oh = y.dim(2),
                ow = y.dim(3);
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    const float* in = x.f32() + p * ih * iw;
    float* out = y.f32() + p * oh * ow;
    for (int64_t i = 0; i < oh; ++i) {
      const float* row = in + NearestSource(i, ih, oh) * iw;
      for (int64_t j = 0; j < ow; ++j) out[i * ow + j] = row[NearestSource(j, iw, ow)];
    }
  }
}

void UpsampleNearestBackward(const Tensor& dy, const Tensor& dx) {
  CheckPair(dx, dy);
  const int64_t planes = dx.dim(0) * dx.dim(1), ih = dx.dim(2), iw = dx.dim(3), oh = dy.dim(2),
                ow = dy.dim(3);
#pragma omp parallel for if (WorthParallel(dy.numel()))
  for (int64_t p = 0; p < planes; ++p) {
    float* in = dx.f32() + p * ih * iw;
    const float* out = dy.f32() + p * oh * ow;
    std::memset(in, 0, sizeof(float) * ih * iw);
    for (int64_t i = 0; i < oh; ++i) {
      float* row = in + NearestSource(i, ih, oh) * iw;
      for (int64_t j = 0; j < ow; ++j) row[NearestSource(j, iw, ow)] += out[i * ow + j];
    }
  }
}

void FrozenBatchNormBackward(const Tensor& dy, const Tensor& weight, const Tensor& running_var,
                             float epsilon, const Tensor& dx) {
  MLPERF_CHECK(dy.numel() == dx.numel() && dy.shape().rank() >= 2);
  const int64_t n = dy.dim(0), c = dy.dim(1), inner = dy.numel() / (n * c);
  MLPERF_CHECK(weight.numel() == c && running_var.numel() == c);
#pragma omp parallel for collapse(2) if (WorthParallel(dy.numel()))
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j) {
      // As FrozenBatchNorm2d's scale: weight * rsqrt(var + eps) in fp32.
      const float scale = weight.f32()[j] * (1.0f / std::sqrt(running_var.f32()[j] + epsilon));
      const float* g = dy.f32() + (i * c + j) * inner;
      float* out = dx.f32() + (i * c + j) * inner;
      for (int64_t q = 0; q < inner; ++q) out[q] = g[q] * scale;
    }
}

void NmsMask(const Tensor& boxes, double iou_threshold, const Tensor& mask) {
  const int64_t n = boxes.numel() / 4, words = (n + 63) / 64;
  MLPERF_CHECK(boxes.numel() == 4 * n && boxes.dtype() == core::DType::kF32);
  MLPERF_CHECK(mask.numel() == n * words && mask.dtype() == core::DType::kI64);
  const float* b = boxes.f32();
  uint64_t* m = static_cast<uint64_t*>(mask.data());
#pragma omp parallel for if (WorthParallel(n * n))
  for (int64_t i = 0; i < n; ++i) {
    const float* p = b + 4 * i;
    const float area_p = (p[2] - p[0]) * (p[3] - p[1]);
    for (int64_t w = 0; w < words; ++w) {
      uint64_t bits = 0;
      for (int64_t j = std::max(i + 1, 64 * w); j < std::min(n, 64 * w + 64); ++j) {
        const float* q = b + 4 * j;
        const float area_q = (q[2] - q[0]) * (q[3] - q[1]);
        const float width = std::max(0.0f, std::min(p[2], q[2]) - std::max(p[0], q[0]));
        const float height = std::max(0.0f, std::min(p[3], q[3]) - std::max(p[1], q[1]));
        const float inter = width * height;
        const float overlap = inter / (area_p + area_q - inter);
        if (static_cast<double>(overlap) > iou_threshold) bits |= uint64_t{1} << (j % 64);
      }
      m[i * words + w] = bits;
    }
  }
}

}  // namespace

MLPERF_REGISTER_KERNEL(NmsMask, Cpu, NmsMask);
MLPERF_REGISTER_KERNEL(UpsampleNearest, Cpu, UpsampleNearest);
MLPERF_REGISTER_KERNEL(UpsampleNearestBackward, Cpu, UpsampleNearestBackward);
MLPERF_REGISTER_KERNEL(FrozenBatchNormBackward, Cpu, FrozenBatchNormBackward);

}  // namespace mlperf::cpu
