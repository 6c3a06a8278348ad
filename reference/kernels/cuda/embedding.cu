#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/ops/embedding.h"

namespace mlperf::cuda {
namespace {

__global__ void Gather(const int32_t* ids, const float* table, float* y, int64_t rows,
                       int64_t width, int64_t vocab) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < rows * width;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int32_t id = ids[i / width];
    // An id out of range is a data bug: make it loud (NaN) rather than read
    // outside the table.
    y[i] = (id >= 0 && id < vocab) ? table[id * width + i % width] : __int_as_float(0x7fc00000);
  }
}

__global__ void ScatterAdd(const int32_t* ids, const float* dy, float* dtable, int64_t rows,
                           int64_t width) {
  for (int64_t f = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; f < width;
       f += static_cast<int64_t>(gridDim.x) * blockDim.x)
    for (int64_t r = 0; r < rows; ++r) dtable[ids[r] * width + f] += dy[r * width + f];
}

}  // namespace

void EmbeddingForward(const core::Tensor& ids, const core::Tensor& table, const core::Tensor& y) {
  const int64_t rows = ids.numel(), vocab = table.dim(0), width = table.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && y.numel() == rows * width);
  Gather<<<Blocks(rows * width), 256, 0, Stream()>>>(ids.as<int32_t>(), table.f32(), y.f32(), rows,
                                                     width, vocab);
  CUDA_CHECK_LAUNCH();
}

void EmbeddingBackward(const core::Tensor& ids, const core::Tensor& dy, const core::Tensor& dtable,
                       bool accumulate) {
  const int64_t rows = ids.numel(), width = dtable.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && dy.numel() == rows * width);
  if (!accumulate) CUDA_CHECK(cudaMemsetAsync(dtable.data(), 0, dtable.bytes(), Stream()));
  ScatterAdd<<<Blocks(width, 128), 128, 0, Stream()>>>(ids.as<int32_t>(), dy.f32(), dtable.f32(),
                                                       rows, width);
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(EmbeddingForward, Cuda, EmbeddingForward);
MLPERF_REGISTER_KERNEL(EmbeddingBackward, Cuda, EmbeddingBackward);

}  // namespace mlperf::cuda
