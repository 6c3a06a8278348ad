#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/ops/attention.h"

namespace mlperf::cuda {
namespace {

// A block per row of scores [b, h, t, t] (the keys of one query); its
// sample's mask row. Indices come from the grid, not from divisions per
// element.
__global__ void AddKeyMask(float* scores, const float* mask, int64_t rows_per_sample, int64_t seq) {
  float* row = scores + blockIdx.x * seq;
  const float* keys = mask + blockIdx.x / rows_per_sample * seq;
  for (int64_t key = threadIdx.x; key < seq; key += blockDim.x)
    row[key] += (1.0f - keys[key]) * -10000.0f;
}

// As AddKeyMask: -10000 where the key's sequence is not the query's.
__global__ void SequenceMaskRow(float* scores, const float* mask, int64_t rows_per_sample,
                                int64_t seq) {
  float* row = scores + blockIdx.x * seq;
  const float* ids = mask + blockIdx.x / rows_per_sample * seq;
  const float own = ids[blockIdx.x % seq];
  for (int64_t key = threadIdx.x; key < seq; key += blockDim.x)
    row[key] += ids[key] == own ? 0.0f : -10000.0f;
}

// A block per row of scores ([rows, keys] matrices, the last `rows` queries
// of `keys`); keys after the query get -inf.
__global__ void CausalRow(float* scores, int64_t rows, int64_t keys) {
  float* row = scores + static_cast<int64_t>(blockIdx.x) * keys;
  const int64_t query = keys - rows + static_cast<int64_t>(blockIdx.x) % rows;
  for (int64_t key = query + 1 + threadIdx.x; key < keys; key += blockDim.x) row[key] = -INFINITY;
}

// Heads [b, h, t, d] <-> columns [column + head * d, + d) of rows [b * t,
// width]; either side fp32, bf16 or fp16 (BERT's typed storage keeps both
// in the precision's type). Grid (token groups, h, b), block (32, 8): a warp
// per (sample, head, token) copies its d contiguous elements, so neither
// side is read strided and no index is divided per element.
constexpr int kTokensPerBlock = 8;

__global__ void PermuteHeads(void* rows, core::DType rows_type, void* heads, core::DType heads_type,
                             int64_t t, int64_t d, int64_t width, int64_t column, bool to_heads) {
  const int64_t token = static_cast<int64_t>(blockIdx.x) * kTokensPerBlock + threadIdx.y;
  if (token >= t) return;
  const int64_t head = blockIdx.y, batch = blockIdx.z;
  const int64_t vec = ((batch * gridDim.y + head) * t + token) * d;
  const int64_t row = (batch * t + token) * width + column + head * d;
  for (int64_t j = threadIdx.x; j < d; j += 32) {
    if (to_heads) {
      detail::StoreAs(heads, heads_type, vec + j, detail::LoadAs(rows, rows_type, row + j));
    } else {
      detail::StoreAs(rows, rows_type, row + j, detail::LoadAs(heads, heads_type, vec + j));
    }
  }
}

void Permute(const core::Tensor& rows, int64_t column, const core::Tensor& heads, bool to_heads) {
  const int64_t b = heads.dim(0), h = heads.dim(1), t = heads.dim(2), d = heads.dim(3);
  MLPERF_CHECK(rows.dim(0) == b * t && column + h * d <= rows.dim(1));
  MLPERF_CHECK(h <= 65535 && b <= 65535);
  if (heads.numel() == 0) return;  // a launch of no blocks would fail
  const dim3 grid(static_cast<unsigned>((t + kTokensPerBlock - 1) / kTokensPerBlock),
                  static_cast<unsigned>(h), static_cast<unsigned>(b));
  PermuteHeads<<<grid, dim3(32, kTokensPerBlock), 0, Stream()>>>(
      rows.data(), rows.dtype(), heads.data(), heads.dtype(), t, d, rows.dim(1), column, to_heads);
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
  if (scores.numel() == 0) return;
  AddKeyMask<<<static_cast<unsigned>(b * h * t), 256, 0, Stream()>>>(scores.f32(), mask.f32(),
                                                                     h * t, t);
  CUDA_CHECK_LAUNCH();
}

void AddSequenceMask(const core::Tensor& scores, const core::Tensor& mask) {
  const int64_t b = scores.dim(0), h = scores.dim(1), t = scores.dim(2);
  MLPERF_CHECK(scores.dim(3) == t && mask.numel() == b * t);
  if (scores.numel() == 0) return;
  SequenceMaskRow<<<static_cast<unsigned>(b * h * t), 256, 0, Stream()>>>(scores.f32(), mask.f32(),
                                                                          h * t, t);
  CUDA_CHECK_LAUNCH();
}

void CausalMask(const core::Tensor& scores) {
  const int64_t rows = scores.dim(2), keys = scores.dim(3);
  MLPERF_CHECK(keys >= rows);
  if (scores.numel() == 0) return;
  CausalRow<<<static_cast<unsigned>(scores.numel() / keys), 256, 0, Stream()>>>(scores.f32(), rows,
                                                                                keys);
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(AddKeyPaddingMask, Cuda, AddKeyPaddingMask);
MLPERF_REGISTER_KERNEL(AddSequenceMask, Cuda, AddSequenceMask);
MLPERF_REGISTER_KERNEL(CausalMask, Cuda, CausalMask);
MLPERF_REGISTER_KERNEL(SplitHeads, Cuda, SplitHeads);
MLPERF_REGISTER_KERNEL(MergeHeads, Cuda, MergeHeads);

}  // namespace mlperf::cuda
