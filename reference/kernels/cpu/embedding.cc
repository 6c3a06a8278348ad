#include "reference/kernels/cpu/embedding.h"

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
  const int64_t rows = ids.numel(), width = dtable.dim(1);
  if (!accumulate) std::memset(dtable.data(), 0, dtable.bytes());
    // Repeated ids collide, so parallelise across the embedding width instead.
#pragma omp parallel for if (WorthParallel(dy.numel()))
  for (int64_t f = 0; f < width; ++f)
    for (int64_t r = 0; r < rows; ++r)
      dtable.f32()[ids.as<int32_t>()[r] * width + f] += dy.f32()[r * width + f];
}

}  // namespace mlperf::cpu
