// Label `gpu`: DLRM-dcnv2's CUDA kernels against their CPU twins on the same
// inputs: the embedding bags' forward, their sparse gradient (rows exactly,
// values to fp32 rounding; both sum each row in sample order), the sparse
// and dense Adagrad steps, the cross layer and the binary cross-entropy; the
// embedding bags over a row-wise shard and the column copies.
// Skips without a CUDA device.
#include <gtest/gtest.h>

#include <vector>

#include "reference/kernels/cuda/context.h"
#include "reference/kernels/dispatch.h"
#include "tests/core/cuda_twin_util.h"

namespace mlperf::twin {
namespace {

class DlrmCudaTwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device; the CPU twins are tested";
  }
};

std::vector<int32_t> Ids(int64_t n, int64_t rows, uint64_t seed) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    ids[i] = static_cast<int32_t>(core::PhiloxBits(seed, 1, static_cast<uint64_t>(i)) %
                                  static_cast<uint64_t>(rows));
  return ids;
}

TEST_F(DlrmCudaTwinTest, EmbeddingBagsAndTheirSparseAdagrad) {
  constexpr int64_t kBatch = 37, kHot = 5, kRows = 23, kDim = 24, kWidth = 3 * kDim, kColumn = kDim;
  const std::vector<int32_t> ids = Ids(kBatch * kHot, kRows, 3);  // many repeats
  Floats table = Random(kRows * kDim, 4), dy = Random(kBatch * kWidth, 5);
  Floats y_cpu(kBatch * kWidth, 0.0f);
  ops::EmbeddingBagSumForward(Tensor(const_cast<int32_t*>(ids.data()), {kBatch, kHot}, DType::kI32),
                              Host(table, {kRows, kDim}), Host(y_cpu, {kBatch, kWidth}), kColumn,
                              {});
  const Dev d_ids(ids, {kBatch, kHot});
  const Dev d_table(table, {kRows, kDim});
  const Dev d_y(Floats(kBatch * kWidth, 0.0f), {kBatch, kWidth});
  ops::EmbeddingBagSumForward(d_ids.t(), d_table.t(), d_y.t(), kColumn, {});
  ExpectClose(d_y.Get(), y_cpu, 1e-5, "EmbeddingBagSumForward");

  const int64_t n = kBatch * kHot;
  std::vector<int32_t> rows_cpu(n, -1), count_cpu(1);
  Floats grads_cpu(n * kDim, 0.0f);
  ops::EmbeddingBagSumBackward(
      Tensor(const_cast<int32_t*>(ids.data()), {kBatch, kHot}, DType::kI32),
      Host(dy, {kBatch, kWidth}), kColumn, {}, Tensor(rows_cpu.data(), {n}, DType::kI32),
      Host(grads_cpu, {n, kDim}), Tensor(count_cpu.data(), {1}, DType::kI32));
  const Dev d_dy(dy, {kBatch, kWidth});
  const Dev d_rows(std::vector<int32_t>(n, -1), {n});
  const Dev d_count(std::vector<int32_t>(1, 0), {1});
  const Dev d_grads(Floats(n * kDim, 0.0f), {n, kDim});
  ops::EmbeddingBagSumBackward(d_ids.t(), d_dy.t(), kColumn, {}, d_rows.t(), d_grads.t(),
                               d_count.t());
  ASSERT_EQ(static_cast<int32_t>(d_count.Words()[0]), count_cpu[0]);
  const std::vector<uint32_t> rows_gpu = d_rows.Words();
  for (int32_t u = 0; u < count_cpu[0]; ++u)
    EXPECT_EQ(static_cast<int32_t>(rows_gpu[u]), rows_cpu[u]);
  Floats g_gpu = d_grads.Get();
  g_gpu.resize(count_cpu[0] * kDim);
  grads_cpu.resize(count_cpu[0] * kDim);
  ExpectClose(g_gpu, grads_cpu, 1e-6, "EmbeddingBagSumBackward");

  Floats sum(kRows * kDim, 0.5f), table_cpu = table, sum_cpu = sum;
  ops::SparseAdagradStep(0.1f, 1e-8f, Tensor(rows_cpu.data(), {n}, DType::kI32),
                         Host(grads_cpu, {count_cpu[0], kDim}),
                         Tensor(count_cpu.data(), {1}, DType::kI32), Host(table_cpu, {kRows, kDim}),
                         Host(sum_cpu, {kRows, kDim}));
  const Dev d_sum(sum, {kRows, kDim});
  ops::SparseAdagradStep(0.1f, 1e-8f, d_rows.t(), d_grads.t(), d_count.t(), d_table.t(), d_sum.t());
  ExpectClose(d_table.Get(), table_cpu, 1e-5, "SparseAdagradStep table");
  ExpectClose(d_sum.Get(), sum_cpu, 1e-5, "SparseAdagradStep sum");
}

// A row-wise shard (rows [5, 15) of 23) and an empty one: the ids of other
// shards skipped in the sums and the sparse gradient; and the column copies
// the sharded model exchanges with.
TEST_F(DlrmCudaTwinTest, TableShardsAndColumnCopies) {
  constexpr int64_t kBatch = 29, kHot = 4, kRows = 23, kDim = 16, kFirst = 5, kShard = 10;
  const std::vector<int32_t> ids = Ids(kBatch * kHot, kRows, 12);
  Floats table = Random(kShard * kDim, 13), dy = Random(kBatch * kDim, 14);
  const Tensor h_ids(const_cast<int32_t*>(ids.data()), {kBatch, kHot}, DType::kI32);
  const Dev d_ids(ids, {kBatch, kHot}), d_table(table, {kShard, kDim}), d_dy(dy, {kBatch, kDim});
  for (const ops::TableShard shard :
       {ops::TableShard{.first_row = kFirst, .rows = kShard, .full_rows = kRows},
        ops::TableShard{.first_row = 0, .rows = 0, .full_rows = kRows}}) {
    Floats used(table.begin(), table.begin() + shard.rows * kDim);
    Floats y_cpu(kBatch * kDim, 3.0f);
    ops::EmbeddingBagSumForward(h_ids, Host(used, {shard.rows, kDim}), Host(y_cpu, {kBatch, kDim}),
                                0, shard);
    const Dev d_y(Floats(kBatch * kDim, 3.0f), {kBatch, kDim});
    ops::EmbeddingBagSumForward(
        d_ids.t(), Tensor(d_table.t().data(), {shard.rows, kDim}, DType::kF32, core::Device::kCuda),
        d_y.t(), 0, shard);
    ExpectClose(d_y.Get(), y_cpu, 1e-5, "EmbeddingBagSumForward over a shard");

    const int64_t n = kBatch * kHot;
    std::vector<int32_t> rows_cpu(n, -1), count_cpu(1, -1);
    Floats grads_cpu(n * kDim, 0.0f);
    ops::EmbeddingBagSumBackward(
        h_ids, Host(dy, {kBatch, kDim}), 0, shard, Tensor(rows_cpu.data(), {n}, DType::kI32),
        Host(grads_cpu, {n, kDim}), Tensor(count_cpu.data(), {1}, DType::kI32));
    const Dev d_rows(std::vector<int32_t>(n, -1), {n}), d_count(std::vector<int32_t>(1, -1), {1});
    const Dev d_grads(Floats(n * kDim, 0.0f), {n, kDim});
    ops::EmbeddingBagSumBackward(d_ids.t(), d_dy.t(), 0, shard, d_rows.t(), d_grads.t(),
                                 d_count.t());
    ASSERT_EQ(static_cast<int32_t>(d_count.Words()[0]), count_cpu[0]);
    const std::vector<uint32_t> rows_gpu = d_rows.Words();
    for (int32_t u = 0; u < count_cpu[0]; ++u)
      EXPECT_EQ(static_cast<int32_t>(rows_gpu[u]), rows_cpu[u]);
    Floats g_gpu = d_grads.Get();
    g_gpu.resize(count_cpu[0] * kDim);
    grads_cpu.resize(count_cpu[0] * kDim);
    ExpectClose(g_gpu, grads_cpu, 1e-6, "EmbeddingBagSumBackward over a shard");
  }

  Floats x = Random(7 * 9, 15), y_cpu = Random(7 * 5, 16);
  const Dev d_x(x, {7, 9}), d_y(y_cpu, {7, 5});
  ops::CopyColumns(Host(x, {7, 9}), 2, Host(y_cpu, {7, 5}), 1, 3, false);
  ops::CopyColumns(Host(x, {7, 9}), 6, Host(y_cpu, {7, 5}), 2, 3, true);
  ops::CopyColumns(d_x.t(), 2, d_y.t(), 1, 3, false);
  ops::CopyColumns(d_x.t(), 6, d_y.t(), 2, 3, true);
  ExpectClose(d_y.Get(), y_cpu, 1e-7, "CopyColumns");
}

TEST_F(DlrmCudaTwinTest, CrossLayerAndBinaryCrossEntropy) {
  constexpr int64_t kN = 1000;
  Floats x0 = Random(kN, 6), z = Random(kN, 7), x = Random(kN, 8), y_cpu(kN), dx0_cpu(kN, 0.25f),
         dz_cpu(kN);
  ops::CrossForward(Host(x0, {kN}), Host(z, {kN}), Host(x, {kN}), Host(y_cpu, {kN}));
  ops::CrossBackward(Host(x0, {kN}), Host(z, {kN}), Host(x, {kN}), Host(dx0_cpu, {kN}),
                     Host(dz_cpu, {kN}));
  const Dev d_x0(x0, {kN}), d_z(z, {kN}), d_x(x, {kN}), d_y(Floats(kN), {kN}),
      d_dx0(Floats(kN, 0.25f), {kN}), d_dz(Floats(kN), {kN});
  ops::CrossForward(d_x0.t(), d_z.t(), d_x.t(), d_y.t());
  ops::CrossBackward(d_x0.t(), d_z.t(), d_x.t(), d_dx0.t(), d_dz.t());
  ExpectClose(d_y.Get(), y_cpu, 1e-6, "CrossForward");
  ExpectClose(d_dx0.Get(), dx0_cpu, 1e-6, "CrossBackward dx0");
  ExpectClose(d_dz.Get(), dz_cpu, 1e-6, "CrossBackward dz");

  Floats logits = Random(kN, 9, -30.0f, 30.0f), labels(kN), loss_cpu(1), dl_cpu(kN);
  for (int64_t i = 0; i < kN; ++i) labels[i] = static_cast<float>(i % 3 == 0);
  ops::BinaryCrossEntropyWithLogits(Host(logits, {kN}), Host(labels, {kN}), Host(loss_cpu, {1}),
                                    Host(dl_cpu, {kN}));
  const Dev d_logits(logits, {kN}), d_labels(labels, {kN}), d_loss(Floats(1), {1}),
      d_dl(Floats(kN), {kN});
  ops::BinaryCrossEntropyWithLogits(d_logits.t(), d_labels.t(), d_loss.t(), d_dl.t());
  ExpectClose(d_loss.Get(), loss_cpu, 1e-5, "BCE loss");
  ExpectClose(d_dl.Get(), dl_cpu, 1e-5, "BCE gradient");
}

TEST_F(DlrmCudaTwinTest, DenseAdagrad) {
  constexpr int64_t kN = 3000;
  Floats w = Random(kN, 10), g = Random(kN, 11), sum(kN, 0.1f);
  Floats w_cpu = w, sum_cpu = sum;
  const std::vector<TensorSlice> slices = {
      {.offset = 0, .numel = 1000}, {.offset = 1000, .numel = 2000, .no_weight_decay = true}};
  const AdagradParams p{.lr = 0.05f, .epsilon = 1e-8f, .weight_decay = 0.01f};
  ops::AdagradStep(core::Device::kCpu, p, slices, w_cpu.data(), g.data(), sum_cpu.data(), nullptr);
  const Dev d_w(w, {kN}), d_g(g, {kN}), d_sum(sum, {kN});
  ops::AdagradStep(core::Device::kCuda, p, slices, d_w.t().f32(), d_g.t().f32(), d_sum.t().f32(),
                   nullptr);
  ExpectClose(d_w.Get(), w_cpu, 1e-6, "AdagradStep w");
  ExpectClose(d_sum.Get(), sum_cpu, 1e-6, "AdagradStep sum");
}

}  // namespace
}  // namespace mlperf::twin
