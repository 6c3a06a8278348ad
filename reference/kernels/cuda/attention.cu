#include "reference/kernels/cuda/attention.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"

namespace mlperf::cuda {
namespace {

__global__ void AddKeyMask(float* scores, const float* mask, int64_t heads, int64_t seq,
                           int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t key = i % seq, batch = i / (heads * seq * seq);
    scores[i] += (1.0f - mask[batch * seq + key]) * -10000.0f;
  }
}

// One thread per element of heads [b, h, t, d]; either side fp32, bf16 or
// fp16 (BERT's typed storage keeps both in the precision's type).
__global__ void PermuteHeads(void* rows, core::DType rows_type, void* heads, core::DType heads_type,
                             int64_t h, int64_t t, int64_t d, int64_t width, int64_t column,
                             int64_t count, bool to_heads) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t j = i % d, token = i / d % t, head = i / (d * t) % h, batch = i / (d * t * h);
    const int64_t row = (batch * t + token) * width + column + head * d + j;
    if (to_heads) {
      detail::StoreAs(heads, heads_type, i, detail::LoadAs(rows, rows_type, row));
    } else {
      detail::StoreAs(rows, rows_type, row, detail::LoadAs(heads, heads_type, i));
    }
  }
}

void Permute(const core::Tensor& rows, int64_t column, const core::Tensor& heads, bool to_heads) {
  const int64_t b = heads.dim(0), h = heads.dim(1), t = heads.dim(2), d = heads.dim(3);
  MLPERF_CHECK(rows.dim(0) == b * t && column + h * d <= rows.dim(1));
  const int64_t count = heads.numel();
  PermuteHeads<<<Blocks(count), 256, 0, Stream()>>>(rows.data(), rows.dtype(), heads.data(),
                                                    heads.dtype(), h, t, d, rows.dim(1), column,
                                                    count, to_heads);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

void SplitHeads(const core::Tensor& rows, int64_t column, const core::Tensor& heads) {
  Permute(rows, column, heads, /*to_heads=*/true);
}

void MergeHeads(const core::Tensor& heads, const core::Tensor& rows, int64_t column) {
  Permute(rows, column, heads, /*to_heads=*/false);
}

void AddKeyPaddingMask(const core::Tensor& scores, const core::Tensor& mask) {
  const int64_t b = scores.dim(0), h = scores.dim(1), t = scores.dim(2);
  MLPERF_CHECK(scores.dim(3) == t && mask.numel() == b * t);
  const int64_t count = scores.numel();
  AddKeyMask<<<Blocks(count), 256, 0, Stream()>>>(scores.f32(), mask.f32(), h, t, count);
  CUDA_CHECK_LAUNCH();
}

}  // namespace mlperf::cuda
