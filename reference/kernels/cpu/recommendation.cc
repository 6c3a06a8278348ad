#include "reference/kernels/ops/recommendation.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "reference/kernels/cpu/parallel.h"

namespace mlperf::cpu {
namespace {

using core::Tensor;

void CheckBag(const Tensor& ids, const Tensor& y, int64_t column, int64_t width) {
  MLPERF_CHECK(ids.dtype() == core::DType::kI32 && ids.shape().rank() == 2);
  MLPERF_CHECK(y.shape().rank() == 2 && y.dim(0) == ids.dim(0));
  MLPERF_CHECK(column >= 0 && column + width <= y.dim(1));
}

// The ids a shard holds, [first, end), of the table's [0, full).
struct Range {
  int64_t first = 0, end = 0, full = 0;
};
Range RangeOf(ops::TableShard shard, int64_t table_rows) {
  if (shard.full_rows == 0) return {.first = 0, .end = table_rows, .full = table_rows};
  MLPERF_CHECK(shard.first_row >= 0 && shard.rows >= 0 &&
               shard.first_row + shard.rows <= shard.full_rows);
  return {.first = shard.first_row, .end = shard.first_row + shard.rows, .full = shard.full_rows};
}

}  // namespace

void EmbeddingBagSumForward(const Tensor& ids, const Tensor& table, const Tensor& y, int64_t column,
                            ops::TableShard shard) {
  const int64_t batch = ids.dim(0), hot = ids.dim(1), dim = table.dim(1);
  CheckBag(ids, y, column, dim);
  const Range range = RangeOf(shard, table.dim(0));
  MLPERF_CHECK(range.end - range.first == table.dim(0));
  const int32_t* id = ids.as<int32_t>();
  const float* base = table.f32();
  // Bound by fetching rows at random: the row a few ids ahead (in this bag
  // or the next ones) is prefetched while the current one is added.
  constexpr int64_t kAhead = 8;
  const int64_t n = batch * hot;
#pragma omp parallel for schedule(static) if (WorthParallel(n * dim))
  for (int64_t b = 0; b < batch; ++b) {
    float* __restrict out = y.f32() + b * y.dim(1) + column;
    const int32_t* bag = id + b * hot;
    bool first = true;
    for (int64_t h = 0; h < hot; ++h) {
      if (b * hot + h + kAhead < n) {
        const int64_t next = bag[h + kAhead];
        if (next >= range.first && next < range.end)
          for (int64_t d = 0; d < dim; d += 16)
            __builtin_prefetch(base + (next - range.first) * dim + d);
      }
      const int64_t r = bag[h];
      MLPERF_CHECK(r >= 0 && r < range.full);
      if (r < range.first || r >= range.end) continue;  // another shard's
      const float* __restrict src = base + (r - range.first) * dim;
      if (first) {
        for (int64_t d = 0; d < dim; ++d) out[d] = src[d];
      } else {
        for (int64_t d = 0; d < dim; ++d) out[d] += src[d];
      }
      first = false;
    }
    if (first) std::fill(out, out + dim, 0.0f);
  }
}

void EmbeddingBagSumBackward(const Tensor& ids, const Tensor& dy, int64_t column,
                             ops::TableShard shard, const Tensor& rows, const Tensor& grads,
                             const Tensor& count) {
  const int64_t batch = ids.dim(0), hot = ids.dim(1), dim = grads.dim(1);
  CheckBag(ids, dy, column, dim);
  MLPERF_CHECK(rows.dtype() == core::DType::kI32 && rows.numel() >= batch * hot &&
               grads.dim(0) >= batch * hot);
  // A whole table's size is not needed here: any id is its row.
  const Range range = RangeOf(shard, INT32_MAX);
  // (row, sample) pairs of the shard's ids sorted by row, then sample: each
  // row's gradient is summed in sample order, the same on every run and
  // thread count.
  std::vector<std::pair<int32_t, int32_t>> pairs;
  pairs.reserve(static_cast<size_t>(batch * hot));
  const int32_t* id = ids.as<int32_t>();
  for (int64_t i = 0; i < batch * hot; ++i) {
    MLPERF_CHECK(id[i] >= 0 && id[i] < range.full);
    if (id[i] >= range.first && id[i] < range.end)
      pairs.emplace_back(static_cast<int32_t>(id[i] - range.first), static_cast<int32_t>(i / hot));
  }
  std::sort(pairs.begin(), pairs.end());
  const auto n = static_cast<int64_t>(pairs.size());
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < n; ++i)
    if (i == 0 || pairs[static_cast<size_t>(i)].first != pairs[static_cast<size_t>(i - 1)].first)
      starts.push_back(i);
  const auto unique = static_cast<int64_t>(starts.size());
  starts.push_back(n);
#pragma omp parallel for if (WorthParallel(n * dim))
  for (int64_t u = 0; u < unique; ++u) {
    float* g = grads.f32() + u * dim;
    std::fill(g, g + dim, 0.0f);
    for (int64_t i = starts[static_cast<size_t>(u)]; i < starts[static_cast<size_t>(u + 1)]; ++i) {
      const float* src = dy.f32() + pairs[static_cast<size_t>(i)].second * dy.dim(1) + column;
      for (int64_t d = 0; d < dim; ++d) g[d] += src[d];
    }
    rows.as<int32_t>()[u] = pairs[static_cast<size_t>(starts[static_cast<size_t>(u)])].first;
  }
  count.as<int32_t>()[0] = static_cast<int32_t>(unique);
}

void SparseAdagradStep(float lr, float epsilon, const Tensor& rows, const Tensor& grads,
                       const Tensor& count, const Tensor& table, const Tensor& sum) {
  const int64_t n = count.as<int32_t>()[0], dim = table.dim(1);
  MLPERF_CHECK(sum.numel() == table.numel() && grads.dim(1) == dim && n <= rows.numel());
#pragma omp parallel for if (WorthParallel(n * dim))
  for (int64_t u = 0; u < n; ++u) {
    const int32_t r = rows.as<int32_t>()[u];
    MLPERF_CHECK(r >= 0 && r < table.dim(0));
    float* w = table.f32() + r * dim;
    float* s = sum.f32() + r * dim;
    const float* g = grads.f32() + u * dim;
    for (int64_t d = 0; d < dim; ++d) {
      s[d] += g[d] * g[d];
      w[d] -= lr * g[d] / (std::sqrt(s[d]) + epsilon);
    }
  }
}

void CrossForward(const Tensor& x0, const Tensor& z, const Tensor& x, const Tensor& y) {
  const int64_t n = y.numel();
  MLPERF_CHECK(x0.numel() == n && z.numel() == n && x.numel() == n);
  const float *a = x0.f32(), *b = z.f32(), *c = x.f32();
  float* out = y.f32();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i] + c[i];
}

void CrossBackward(const Tensor& x0, const Tensor& z, const Tensor& dy, const Tensor& dx0,
                   const Tensor& dz) {
  const int64_t n = dy.numel();
  MLPERF_CHECK(x0.numel() == n && z.numel() == n && dx0.numel() == n && dz.numel() == n);
  const float *a = x0.f32(), *b = z.f32(), *g = dy.f32();
  float *da = dx0.f32(), *db = dz.f32();
#pragma omp parallel for if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];  // dz may be dy itself
    da[i] += gi * b[i];
    db[i] = gi * a[i];
  }
}

void BinaryCrossEntropyWithLogits(const Tensor& logits, const Tensor& labels, const Tensor& loss,
                                  const Tensor& dlogits) {
  const int64_t n = logits.numel();
  MLPERF_CHECK(labels.numel() == n && dlogits.numel() == n && loss.numel() == 1 && n > 0);
  const float *z = logits.f32(), *y = labels.f32();
  double total = 0.0;
#pragma omp parallel for reduction(+ : total) if (WorthParallel(n))
  for (int64_t i = 0; i < n; ++i) {
    const double zi = z[i];
    total += std::max(zi, 0.0) - zi * y[i] + std::log1p(std::exp(-std::fabs(zi)));
    const double p = zi >= 0 ? 1.0 / (1.0 + std::exp(-zi)) : std::exp(zi) / (1.0 + std::exp(zi));
    dlogits.f32()[i] = static_cast<float>((p - y[i]) / static_cast<double>(n));
  }
  loss.f32()[0] = static_cast<float>(total / static_cast<double>(n));
}

MLPERF_REGISTER_KERNEL(EmbeddingBagSumForward, Cpu, EmbeddingBagSumForward);
MLPERF_REGISTER_KERNEL(EmbeddingBagSumBackward, Cpu, EmbeddingBagSumBackward);
void CopyColumns(const Tensor& x, int64_t x_column, const Tensor& y, int64_t y_column,
                 int64_t width, bool accumulate) {
  const int64_t batch = x.dim(0), wx = x.dim(1), wy = y.dim(1);
  MLPERF_CHECK(x.shape().rank() == 2 && y.shape().rank() == 2 && y.dim(0) == batch);
  MLPERF_CHECK(width >= 0 && x_column >= 0 && x_column + width <= wx && y_column >= 0 &&
               y_column + width <= wy);
#pragma omp parallel for if (WorthParallel(batch * width))
  for (int64_t b = 0; b < batch; ++b) {
    const float* src = x.f32() + b * wx + x_column;
    float* dst = y.f32() + b * wy + y_column;
    if (accumulate) {
      for (int64_t j = 0; j < width; ++j) dst[j] += src[j];
    } else {
      std::memcpy(dst, src, sizeof(float) * static_cast<size_t>(width));
    }
  }
}

MLPERF_REGISTER_KERNEL(SparseAdagradStep, Cpu, SparseAdagradStep);
MLPERF_REGISTER_KERNEL(CrossForward, Cpu, CrossForward);
MLPERF_REGISTER_KERNEL(CrossBackward, Cpu, CrossBackward);
MLPERF_REGISTER_KERNEL(BinaryCrossEntropyWithLogits, Cpu, BinaryCrossEntropyWithLogits);
MLPERF_REGISTER_KERNEL(CopyColumns, Cpu, CopyColumns);

}  // namespace mlperf::cpu
