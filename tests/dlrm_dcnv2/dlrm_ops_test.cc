// The recommendation ops on the CPU: each backward against central finite
// differences of L = sum(r * forward) for a fixed random r, and the sparse
// gradient's rows (distinct, ascending, only those touched); the sparse
// Adagrad step against its formula, leaving untouched rows bit for bit; a
// table split into row shards against the whole, and the column copies.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::ops {
namespace {

using core::DType;
using core::Tensor;

std::vector<float> Random(int64_t n, uint64_t stream, float scale = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] =
        scale * (core::PhiloxUniform(3, stream, static_cast<uint64_t>(i)) - 0.5f);
  return v;
}

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

// d/dx[i] of loss() by central differences in x.
double Numeric(std::vector<float>& x, size_t i, const std::function<double()>& loss) {
  const float keep = x[i], h = 1e-2f;
  x[i] = keep + h;
  const double up = loss();
  x[i] = keep - h;
  const double down = loss();
  x[i] = keep;
  return (up - down) / (2.0 * h);
}

TEST(RecommendationOps, EmbeddingBagSumGradientIsSparseAndMatchesFiniteDifferences) {
  constexpr int64_t kBatch = 5, kHot = 3, kRows = 9, kDim = 4, kWidth = 11, kColumn = 5;
  std::vector<float> table = Random(kRows * kDim, 1), r = Random(kBatch * kWidth, 2);
  std::vector<int32_t> ids = {3, 3, 0, 7, 1, 3, 8, 8, 8, 0, 2, 7, 3, 1, 1};  // rows 4, 5, 6 unused
  Tensor t_ids(ids.data(), {kBatch, kHot}, DType::kI32),
      t_table(table.data(), {kRows, kDim}, DType::kF32);
  std::vector<float> y(kBatch * kWidth, 7.0f);
  Tensor t_y(y.data(), {kBatch, kWidth}, DType::kF32);
  auto loss = [&] {
    EmbeddingBagSumForward(t_ids, t_table, t_y, kColumn, {});
    return Dot(y, r);
  };
  loss();
  for (int64_t b = 0; b < kBatch; ++b)  // the other columns untouched
    for (int64_t c = 0; c < kWidth; ++c)
      if (c < kColumn || c >= kColumn + kDim) {
        EXPECT_EQ(y[b * kWidth + c], 7.0f);
      }
  std::vector<int32_t> rows(kBatch * kHot, -1), count(1);
  std::vector<float> grads(kBatch * kHot * kDim);
  EmbeddingBagSumBackward(t_ids, Tensor(r.data(), {kBatch, kWidth}, DType::kF32), kColumn, {},
                          Tensor(rows.data(), {kBatch * kHot}, DType::kI32),
                          Tensor(grads.data(), {kBatch * kHot, kDim}, DType::kF32),
                          Tensor(count.data(), {1}, DType::kI32));
  ASSERT_EQ(count[0], 6);
  EXPECT_EQ(std::vector<int32_t>(rows.begin(), rows.begin() + 6),
            (std::vector<int32_t>{0, 1, 2, 3, 7, 8}));
  for (int u = 0; u < count[0]; ++u)
    for (int64_t d = 0; d < kDim; ++d) {
      const size_t i = static_cast<size_t>(rows[u] * kDim + d);
      EXPECT_NEAR(grads[u * kDim + d], Numeric(table, i, loss), 1e-3) << rows[u] << "," << d;
    }
}

// A table split by rows into shards: the shards' pooled sums add up to the
// whole table's, and each shard's sparse gradient is the whole one's rows
// that fall in it, renumbered from its first row, with the same values.
TEST(RecommendationOps, RowShardsAddUpToTheWholeTable) {
  constexpr int64_t kBatch = 6, kHot = 4, kRows = 10, kDim = 3;
  std::vector<float> table = Random(kRows * kDim, 7), dy = Random(kBatch * kDim, 8);
  // Sample 5 holds ids of the first shard only: the others pool nothing for it.
  std::vector<int32_t> ids = {9, 0, 4, 4, 3, 7, 7, 1, 2, 5, 8, 9,
                              6, 6, 6, 6, 0, 9, 3, 2, 1, 0, 2, 1};
  const Tensor t_ids(ids.data(), {kBatch, kHot}, DType::kI32);
  const Tensor t_dy(dy.data(), {kBatch, kDim}, DType::kF32);
  auto backward = [&](const Tensor& ids_t, TableShard shard, std::vector<int32_t>* rows,
                      std::vector<float>* grads) {
    rows->assign(kBatch * kHot, -1);
    grads->assign(kBatch * kHot * kDim, 0.0f);
    std::vector<int32_t> count(1);
    EmbeddingBagSumBackward(ids_t, t_dy, 0, shard,
                            Tensor(rows->data(), {kBatch * kHot}, DType::kI32),
                            Tensor(grads->data(), {kBatch * kHot, kDim}, DType::kF32),
                            Tensor(count.data(), {1}, DType::kI32));
    rows->resize(static_cast<size_t>(count[0]));
    grads->resize(static_cast<size_t>(count[0] * kDim));
  };
  std::vector<float> whole(kBatch * kDim);
  EmbeddingBagSumForward(t_ids, Tensor(table.data(), {kRows, kDim}, DType::kF32),
                         Tensor(whole.data(), {kBatch, kDim}, DType::kF32), 0, {});
  std::vector<int32_t> whole_rows;
  std::vector<float> whole_grads;
  backward(t_ids, {}, &whole_rows, &whole_grads);
  std::vector<double> added(kBatch * kDim, 0.0);
  int32_t rows_seen = 0;
  for (const auto& [first, end] : {std::pair<int64_t, int64_t>{0, 4}, {4, 4}, {4, 7}, {7, 10}}) {
    const TableShard shard = {.first_row = first, .rows = end - first, .full_rows = kRows};
    std::vector<float> part(kBatch * kDim, 7.0f);  // overwritten, 0 where nothing is held
    EmbeddingBagSumForward(t_ids,
                           Tensor(table.data() + first * kDim, {end - first, kDim}, DType::kF32),
                           Tensor(part.data(), {kBatch, kDim}, DType::kF32), 0, shard);
    for (size_t i = 0; i < part.size(); ++i) added[i] += part[i];
    if (first == end) {
      EXPECT_EQ(part, std::vector<float>(part.size(), 0.0f));
    }
    std::vector<int32_t> rows;
    std::vector<float> grads;
    backward(t_ids, shard, &rows, &grads);
    for (size_t u = 0; u < rows.size(); ++u) {
      ASSERT_LT(rows_seen, static_cast<int32_t>(whole_rows.size()));
      EXPECT_EQ(rows[u] + first, whole_rows[static_cast<size_t>(rows_seen)]);
      for (int64_t d = 0; d < kDim; ++d)
        EXPECT_EQ(grads[u * kDim + d], whole_grads[rows_seen * kDim + d]);
      ++rows_seen;
    }
  }
  EXPECT_EQ(rows_seen, static_cast<int32_t>(whole_rows.size()));
  for (size_t i = 0; i < whole.size(); ++i) EXPECT_NEAR(added[i], whole[i], 1e-6) << i;
}

TEST(RecommendationOps, CopyColumnsCopiesOrAddsOneBlock) {
  std::vector<float> x = Random(3 * 5, 9), y(3 * 4, 1.0f);
  const Tensor t_x(x.data(), {3, 5}, DType::kF32), t_y(y.data(), {3, 4}, DType::kF32);
  CopyColumns(t_x, 1, t_y, 2, 2, false);
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_EQ(y[b * 4 + 0], 1.0f);
    EXPECT_EQ(y[b * 4 + 1], 1.0f);
    EXPECT_EQ(y[b * 4 + 2], x[b * 5 + 1]);
    EXPECT_EQ(y[b * 4 + 3], x[b * 5 + 2]);
  }
  CopyColumns(t_x, 3, t_y, 0, 2, true);
  for (int64_t b = 0; b < 3; ++b) {
    EXPECT_EQ(y[b * 4 + 0], 1.0f + x[b * 5 + 3]);
    EXPECT_EQ(y[b * 4 + 1], 1.0f + x[b * 5 + 4]);
  }
}

TEST(RecommendationOps, CrossBackwardMatchesFiniteDifferences) {
  constexpr int64_t kN = 24;
  std::vector<float> x0 = Random(kN, 3, 2), z = Random(kN, 4, 2), x = Random(kN, 5, 2),
                     r = Random(kN, 6), y(kN);
  auto loss = [&] {
    CrossForward(Tensor(x0.data(), {kN}, DType::kF32), Tensor(z.data(), {kN}, DType::kF32),
                 Tensor(x.data(), {kN}, DType::kF32), Tensor(y.data(), {kN}, DType::kF32));
    return Dot(y, r);
  };
  std::vector<float> dx0(kN, 0.5f), dz(kN);  // dx0 accumulates onto 0.5
  CrossBackward(Tensor(x0.data(), {kN}, DType::kF32), Tensor(z.data(), {kN}, DType::kF32),
                Tensor(r.data(), {kN}, DType::kF32), Tensor(dx0.data(), {kN}, DType::kF32),
                Tensor(dz.data(), {kN}, DType::kF32));
  for (size_t i = 0; i < kN; ++i) {
    EXPECT_NEAR(dx0[i] - 0.5f, Numeric(x0, i, loss), 1e-3);
    EXPECT_NEAR(dz[i], Numeric(z, i, loss), 1e-3);
    EXPECT_NEAR(r[i], Numeric(x, i, loss), 1e-3);  // dx = dy
  }
}

TEST(RecommendationOps, BinaryCrossEntropyMatchesFiniteDifferencesAndLargeLogits) {
  // The extremes confidently wrong: a naive log(sigmoid) in fp32 gives Inf there.
  std::vector<float> z = {-30.0f, -2.0f, -0.1f, 0.0f, 0.7f, 3.0f, 40.0f}, y = {1, 1, 0, 1, 1, 0, 0};
  const auto n = static_cast<int64_t>(z.size());
  std::vector<float> loss(1), dz(z.size());
  auto run = [&] {
    BinaryCrossEntropyWithLogits(
        Tensor(z.data(), {n}, DType::kF32), Tensor(y.data(), {n}, DType::kF32),
        Tensor(loss.data(), {1}, DType::kF32), Tensor(dz.data(), {n}, DType::kF32));
    return static_cast<double>(loss[0]);
  };
  run();
  const std::vector<float> analytic = dz;
  // -log(sigmoid(z)) = log(1 + exp(-z)) for a click, -log(1 - sigmoid(z)) = log(1 + exp(z)) else.
  double expected = 0;
  for (size_t i = 0; i < z.size(); ++i)
    expected += std::log1p(std::exp(y[i] != 0 ? -static_cast<double>(z[i]) : z[i]));
  expected /= static_cast<double>(n);
  EXPECT_GT(expected, 70.0 / 7);  // the extremes dominate
  EXPECT_NEAR(loss[0], expected, 2e-6 * expected);
  for (size_t i = 0; i < z.size(); ++i) EXPECT_NEAR(analytic[i], Numeric(z, i, run), 2e-3) << i;
}

TEST(RecommendationOps, SparseAdagradStepsOnlyTheGivenRows) {
  constexpr int64_t kRows = 6, kDim = 3;
  std::vector<float> table = Random(kRows * kDim, 7), sum(kRows * kDim, 0.25f);
  const std::vector<float> table0 = table, sum0 = sum;
  std::vector<int32_t> rows = {1, 4, 5}, count = {2};  // the third is past count
  std::vector<float> grads = Random(3 * kDim, 8);
  SparseAdagradStep(0.1f, 1e-8f, Tensor(rows.data(), {3}, DType::kI32),
                    Tensor(grads.data(), {3, kDim}, DType::kF32),
                    Tensor(count.data(), {1}, DType::kI32),
                    Tensor(table.data(), {kRows, kDim}, DType::kF32),
                    Tensor(sum.data(), {kRows, kDim}, DType::kF32));
  for (int64_t r = 0; r < kRows; ++r)
    for (int64_t d = 0; d < kDim; ++d) {
      const size_t i = static_cast<size_t>(r * kDim + d);
      const int u = r == 1 ? 0 : (r == 4 ? 1 : -1);
      if (u < 0) {
        EXPECT_EQ(table[i], table0[i]);
        EXPECT_EQ(sum[i], sum0[i]);
        continue;
      }
      const float g = grads[static_cast<size_t>(u * kDim + d)], s = sum0[i] + g * g;
      EXPECT_FLOAT_EQ(sum[i], s);
      EXPECT_FLOAT_EQ(table[i], table0[i] - 0.1f * g / (std::sqrt(s) + 1e-8f));
    }
}

}  // namespace
}  // namespace mlperf::ops
