// CUDA twins of cpu/recommendation.cc. The sparse gradient sorts the
// (id, sample) pairs with CUB's stable radix sort in scratch memory, so a
// row's gradient is summed in sample order, as on the CPU; counts stay on
// the device (kernels launched for the most rows there can be return early).
#include <algorithm>
#include <cub/cub.cuh>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/ops/recommendation.h"

namespace mlperf::cuda {
namespace {

using core::Tensor;
constexpr int kThreads = 256;

// The ids a shard holds, [first, end), of the table's [0, full).
struct Range {
  int64_t first = 0, end = 0, full = 0;
};
Range RangeOf(ops::TableShard shard, int64_t table_rows) {
  if (shard.full_rows == 0) return {0, table_rows, table_rows};
  MLPERF_CHECK(shard.first_row >= 0 && shard.rows >= 0 &&
               shard.first_row + shard.rows <= shard.full_rows);
  return {shard.first_row, shard.first_row + shard.rows, shard.full_rows};
}

// Sorted after every real row: an id another shard holds.
constexpr int32_t kElsewhere = INT32_MAX;

__global__ void BagSum(const int32_t* ids, const float* table, float* y, int64_t batch, int64_t hot,
                       Range range, int64_t dim, int64_t y_width, int64_t column) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < batch * dim;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / dim, d = i % dim;
    float s = 0.0f;
    for (int64_t h = 0; h < hot; ++h) {
      const int64_t r = ids[b * hot + h];
      // An id out of range is a data bug: make it loud (NaN).
      if (r < 0 || r >= range.full) s += __int_as_float(0x7fc00000);
      if (r >= range.first && r < range.end) s += table[(r - range.first) * dim + d];
    }
    y[b * y_width + column + d] = s;
  }
}

__global__ void Pairs(const int32_t* ids, int64_t n, int64_t hot, Range range, int32_t* keys,
                      int32_t* samples) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t id = ids[i];
    keys[i] =
        id >= range.first && id < range.end ? static_cast<int32_t>(id - range.first) : kElsewhere;
    samples[i] = static_cast<int32_t>(i / hot);
  }
}

__global__ void FirstOfRun(const int32_t* keys, int64_t n, int32_t* flags) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    flags[i] = keys[i] != kElsewhere && (i == 0 || keys[i] != keys[i - 1]) ? 1 : 0;
}

// runs: the inclusive scan of the flags (row u's pairs start where it is
// u + 1). The rows end at the first id held elsewhere (sorted last).
__global__ void RunStarts(const int32_t* keys, const int32_t* flags, const int32_t* runs, int64_t n,
                          int32_t* rows, int32_t* starts, int32_t* count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (flags[i]) {
      rows[runs[i] - 1] = keys[i];
      starts[runs[i] - 1] = static_cast<int32_t>(i);
    }
    const bool last_held = keys[i] != kElsewhere && (i == n - 1 || keys[i + 1] == kElsewhere);
    if (last_held) {
      *count = runs[i];
      starts[runs[i]] = static_cast<int32_t>(i + 1);
    }
    if (i == 0 && keys[0] == kElsewhere) *count = 0;
  }
}

// One block per possible row: sums its samples' dy columns in sample order.
__global__ void RowGradients(const int32_t* samples, const int32_t* starts, const int32_t* count,
                             const float* dy, int64_t dy_width, int64_t column, int64_t dim,
                             float* grads) {
  const int64_t u = blockIdx.x;
  if (u >= *count) return;
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    float s = 0.0f;
    for (int32_t i = starts[u]; i < starts[u + 1]; ++i) s += dy[samples[i] * dy_width + column + d];
    grads[u * dim + d] = s;
  }
}

__global__ void AdagradRows(float lr, float epsilon, const int32_t* rows, const float* grads,
                            const int32_t* count, int64_t dim, float* table, float* sum) {
  const int64_t u = blockIdx.x;
  if (u >= *count) return;
  const int64_t r = rows[u];
  for (int64_t d = threadIdx.x; d < dim; d += blockDim.x) {
    const float g = grads[u * dim + d];
    const float s = sum[r * dim + d] + g * g;
    sum[r * dim + d] = s;
    table[r * dim + d] -= lr * g / (sqrtf(s) + epsilon);
  }
}

__global__ void Cross(const float* x0, const float* z, const float* x, float* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = x0[i] * z[i] + x[i];
}

__global__ void CrossGrad(const float* x0, const float* z, const float* dy, float* dx0, float* dz,
                          int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float g = dy[i];
    dx0[i] += g * z[i];
    dz[i] = g * x0[i];
  }
}

__global__ void Bce(const float* z, const float* y, int64_t n, float* loss, float* dz) {
  float total = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) {
    const float zi = z[i];
    total += fmaxf(zi, 0.0f) - zi * y[i] + log1pf(expf(-fabsf(zi)));
    dz[i] = (1.0f / (1.0f + expf(-zi)) - y[i]) / static_cast<float>(n);
  }
  total = detail::BlockSum<kThreads>(total);
  if (threadIdx.x == 0) *loss = total / static_cast<float>(n);
}

__global__ void Columns(const float* x, int64_t wx, float* y, int64_t wy, int64_t batch,
                        int64_t width, bool accumulate) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < batch * width;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t b = i / width, j = i % width;
    const float v = x[b * wx + j];
    y[b * wy + j] = accumulate ? y[b * wy + j] + v : v;
  }
}

size_t Align(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace

void EmbeddingBagSumForward(const Tensor& ids, const Tensor& table, const Tensor& y, int64_t column,
                            ops::TableShard shard) {
  const int64_t batch = ids.dim(0), hot = ids.dim(1), dim = table.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && y.dim(0) == batch && column + dim <= y.dim(1));
  const Range range = RangeOf(shard, table.dim(0));
  MLPERF_CHECK(range.end - range.first == table.dim(0));
  BagSum<<<Blocks(batch * dim), kThreads, 0, Stream()>>>(ids.as<int32_t>(), table.f32(), y.f32(),
                                                         batch, hot, range, dim, y.dim(1), column);
  CUDA_CHECK_LAUNCH();
}

void EmbeddingBagSumBackward(const Tensor& ids, const Tensor& dy, int64_t column,
                             ops::TableShard shard, const Tensor& rows, const Tensor& grads,
                             const Tensor& count) {
  const Range range = RangeOf(shard, INT32_MAX);
  const int64_t n = ids.numel(), hot = ids.dim(1), dim = grads.dim(1);
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && rows.numel() >= n && grads.dim(0) >= n);
  MLPERF_CHECK(n > 0 && n < (int64_t{1} << 31) && column + dim <= dy.dim(1));
  const auto num = static_cast<int>(n);
  size_t sort_bytes = 0, scan_bytes = 0;
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(
      nullptr, sort_bytes, static_cast<int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
      static_cast<int32_t*>(nullptr), static_cast<int32_t*>(nullptr), num));
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, static_cast<int32_t*>(nullptr),
                                           static_cast<int32_t*>(nullptr), num));
  const size_t ints = Align(sizeof(int32_t) * (n + 1));
  const size_t temp = Align(std::max(sort_bytes, scan_bytes));
  auto* base = static_cast<char*>(Scratch(6 * ints + temp, kScratchWorkspace));
  auto slot = [&](int k) { return reinterpret_cast<int32_t*>(base + k * ints); };
  int32_t *keys = slot(0), *samples = slot(1), *sorted_keys = slot(2), *sorted_samples = slot(3);
  int32_t *flags = slot(4), *starts = slot(5), *runs = keys;  // keys are free once sorted
  void* temp_storage = base + 6 * ints;
  Pairs<<<Blocks(n), kThreads, 0, Stream()>>>(ids.as<int32_t>(), n, hot, range, keys, samples);
  CUDA_CHECK(cub::DeviceRadixSort::SortPairs(temp_storage, sort_bytes, keys, sorted_keys, samples,
                                             sorted_samples, num, 0, 32, Stream()));
  FirstOfRun<<<Blocks(n), kThreads, 0, Stream()>>>(sorted_keys, n, flags);
  CUDA_CHECK(cub::DeviceScan::InclusiveSum(temp_storage, scan_bytes, flags, runs, num, Stream()));
  RunStarts<<<Blocks(n), kThreads, 0, Stream()>>>(sorted_keys, flags, runs, n, rows.as<int32_t>(),
                                                  starts, count.as<int32_t>());
  RowGradients<<<static_cast<unsigned>(n), 128, 0, Stream()>>>(
      sorted_samples, starts, count.as<int32_t>(), dy.f32(), dy.dim(1), column, dim, grads.f32());
  CUDA_CHECK_LAUNCH();
}

void SparseAdagradStep(float lr, float epsilon, const Tensor& rows, const Tensor& grads,
                       const Tensor& count, const Tensor& table, const Tensor& sum) {
  MLPERF_CHECK(sum.numel() == table.numel() && grads.dim(1) == table.dim(1));
  AdagradRows<<<static_cast<unsigned>(rows.numel()), 128, 0, Stream()>>>(
      lr, epsilon, rows.as<int32_t>(), grads.f32(), count.as<int32_t>(), table.dim(1), table.f32(),
      sum.f32());
  CUDA_CHECK_LAUNCH();
}

void CrossForward(const Tensor& x0, const Tensor& z, const Tensor& x, const Tensor& y) {
  MLPERF_CHECK(x0.numel() == y.numel() && z.numel() == y.numel() && x.numel() == y.numel());
  Cross<<<Blocks(y.numel()), kThreads, 0, Stream()>>>(x0.f32(), z.f32(), x.f32(), y.f32(),
                                                      y.numel());
  CUDA_CHECK_LAUNCH();
}

void CrossBackward(const Tensor& x0, const Tensor& z, const Tensor& dy, const Tensor& dx0,
                   const Tensor& dz) {
  MLPERF_CHECK(x0.numel() == dy.numel() && z.numel() == dy.numel() && dx0.numel() == dy.numel());
  CrossGrad<<<Blocks(dy.numel()), kThreads, 0, Stream()>>>(x0.f32(), z.f32(), dy.f32(), dx0.f32(),
                                                           dz.f32(), dy.numel());
  CUDA_CHECK_LAUNCH();
}

void BinaryCrossEntropyWithLogits(const Tensor& logits, const Tensor& labels, const Tensor& loss,
                                  const Tensor& dlogits) {
  MLPERF_CHECK(labels.numel() == logits.numel() && dlogits.numel() == logits.numel());
  Bce<<<1, kThreads, 0, Stream()>>>(logits.f32(), labels.f32(), logits.numel(), loss.f32(),
                                    dlogits.f32());
  CUDA_CHECK_LAUNCH();
}

void CopyColumns(const Tensor& x, int64_t x_column, const Tensor& y, int64_t y_column,
                 int64_t width, bool accumulate) {
  const int64_t batch = x.dim(0);
  MLPERF_CHECK(y.dim(0) == batch && width >= 0 && x_column >= 0 && x_column + width <= x.dim(1) &&
               y_column >= 0 && y_column + width <= y.dim(1));
  if (batch * width == 0) return;
  Columns<<<Blocks(batch * width), kThreads, 0, Stream()>>>(
      x.f32() + x_column, x.dim(1), y.f32() + y_column, y.dim(1), batch, width, accumulate);
  CUDA_CHECK_LAUNCH();
}

MLPERF_REGISTER_KERNEL(EmbeddingBagSumForward, Cuda, EmbeddingBagSumForward);
MLPERF_REGISTER_KERNEL(EmbeddingBagSumBackward, Cuda, EmbeddingBagSumBackward);
MLPERF_REGISTER_KERNEL(SparseAdagradStep, Cuda, SparseAdagradStep);
MLPERF_REGISTER_KERNEL(CrossForward, Cuda, CrossForward);
MLPERF_REGISTER_KERNEL(CrossBackward, Cuda, CrossBackward);
MLPERF_REGISTER_KERNEL(BinaryCrossEntropyWithLogits, Cuda, BinaryCrossEntropyWithLogits);
MLPERF_REGISTER_KERNEL(CopyColumns, Cuda, CopyColumns);

}  // namespace mlperf::cuda
