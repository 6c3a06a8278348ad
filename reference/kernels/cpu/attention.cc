#include "reference/kernels/ops/attention.h"

#include <cmath>

#include "base/check.h"
#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {

void AddKeyPaddingMask(const core::Tensor& scores, const core::Tensor& mask) {
  const int64_t b = scores.dim(0), h = scores.dim(1), t = scores.dim(2);
  MLPERF_CHECK(scores.dim(3) == t && mask.numel() == b * t);
  float* s = scores.f32();
  const float* m = mask.f32();
#pragma omp parallel for if (WorthParallel(scores.numel()))
  for (int64_t i = 0; i < b * h; ++i)
    for (int64_t r = 0; r < t; ++r)
      for (int64_t c = 0; c < t; ++c)
        s[(i * t + r) * t + c] += (1.0f - m[(i / h) * t + c]) * -10000.0f;
}

void AddSequenceMask(const core::Tensor& scores, const core::Tensor& mask) {
  const int64_t b = scores.dim(0), h = scores.dim(1), t = scores.dim(2);
  MLPERF_CHECK(scores.dim(3) == t && mask.numel() == b * t);
  float* s = scores.f32();
  const float* m = mask.f32();
#pragma omp parallel for if (WorthParallel(scores.numel()))
  for (int64_t i = 0; i < b * h; ++i) {
    const float* ids = m + (i / h) * t;
    for (int64_t r = 0; r < t; ++r)
      for (int64_t c = 0; c < t; ++c) s[(i * t + r) * t + c] += ids[c] == ids[r] ? 0.0f : -10000.0f;
  }
}

void CausalMask(const core::Tensor& scores) {
  const int64_t rows = scores.dim(2), keys = scores.dim(3), before = keys - rows;
  MLPERF_CHECK(before >= 0);
  if (scores.numel() == 0) return;
  float* s = scores.f32();
  const int64_t matrices = scores.numel() / (rows * keys);
#pragma omp parallel for if (WorthParallel(scores.numel()))
  for (int64_t i = 0; i < matrices; ++i)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = before + r + 1; c < keys; ++c) s[(i * rows + r) * keys + c] = -INFINITY;
}

namespace {

// Copies between rows and heads in the direction `to_heads`.
void PermuteHeads(const core::Tensor& rows, int64_t column, const core::Tensor& heads,
                  bool to_heads) {
  const int64_t b = heads.dim(0), h = heads.dim(1), t = heads.dim(2), d = heads.dim(3);
  const int64_t width = rows.dim(1);
  MLPERF_CHECK(rows.dim(0) == b * t && column + h * d <= width);
  float* r = rows.f32();
  float* x = heads.f32();
#pragma omp parallel for if (WorthParallel(heads.numel()))
  for (int64_t i = 0; i < b * h * t; ++i) {
    const int64_t batch = i / (h * t), head = i / t % h, token = i % t;
    float* row = r + (batch * t + token) * width + column + head * d;
    float* out = x + i * d;
    for (int64_t j = 0; j < d; ++j) {
      if (to_heads) {
        out[j] = row[j];
      } else {
        row[j] = out[j];
      }
    }
  }
}

}  // namespace

void SplitHeads(const core::Tensor& rows, int64_t column, const core::Tensor& heads) {
  PermuteHeads(rows, column, heads, /*to_heads=*/true);
}

void MergeHeads(const core::Tensor& heads, const core::Tensor& rows, int64_t column) {
  PermuteHeads(rows, column, heads, /*to_heads=*/false);
}

MLPERF_REGISTER_KERNEL(AddKeyPaddingMask, Cpu, AddKeyPaddingMask);
MLPERF_REGISTER_KERNEL(AddSequenceMask, Cpu, AddSequenceMask);
MLPERF_REGISTER_KERNEL(CausalMask, Cpu, CausalMask);
MLPERF_REGISTER_KERNEL(SplitHeads, Cpu, SplitHeads);
MLPERF_REGISTER_KERNEL(MergeHeads, Cpu, MergeHeads);

}  // namespace mlperf::cpu
