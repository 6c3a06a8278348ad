#include "reference/kernels/ops/embedding.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {

void EmbeddingForward(const core::Tensor& ids, const core::Tensor& table, const core::Tensor& y) {
  const int64_t rows = ids.numel(), vocab = table.dim(0), width = table.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && y.numel() == rows * width);
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    const int32_t id = ids.as<int32_t>()[r];
    MLPERF_CHECK(id >= 0 && id < vocab);
    std::memcpy(y.f32() + r * width, table.f32() + id * width, sizeof(float) * width);
  }
}

void EmbeddingBackward(const core::Tensor& ids, const core::Tensor& dy, const core::Tensor& dtable,
                       bool accumulate) {
  const int64_t rows = ids.numel(), entries = dtable.dim(0), width = dtable.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && dy.numel() == rows * width);
  const int32_t* id = ids.as<int32_t>();
  const float* grad = dy.f32();
  float* table = dtable.f32();
  if (!accumulate) {
#pragma omp parallel for if (WorthParallel(dtable.numel()))
    for (int64_t e = 0; e < entries; ++e) std::memset(table + e * width, 0, sizeof(float) * width);
  }
  // Repeated ids collide, so each thread owns a range of columns (whole
  // cache lines) and walks every row within it: contiguous adds that
  // vectorise, each element summed in row order as on one thread.
  constexpr int64_t kLine = 16;
#pragma omp parallel if (WorthParallel(dy.numel()))
  {
    const int64_t t = omp_get_thread_num(), team = omp_get_num_threads();
    const int64_t lines = (width + kLine - 1) / kLine;
    const int64_t begin = std::min(width, lines * t / team * kLine);
    const int64_t end = std::min(width, lines * (t + 1) / team * kLine);
    for (int64_t r = 0; r < rows; ++r) {
      MLPERF_CHECK(id[r] >= 0 && id[r] < entries);
      float* dst = table + id[r] * width;
      const float* src = grad + r * width;
      for (int64_t f = begin; f < end; ++f) dst[f] += src[f];
    }
  }
}

MLPERF_REGISTER_KERNEL(EmbeddingForward, Cpu, EmbeddingForward);
MLPERF_REGISTER_KERNEL(EmbeddingBackward, Cpu, EmbeddingBackward);

}  // namespace mlperf::cpu
