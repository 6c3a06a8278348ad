// DLRM over MPI ranks against one process (run under mpirun -np 1, 2 or 4):
// the tables sharded (two split by rows, one of them with fewer rows than
// there are ranks; the rest whole on one rank each), the pooled rows
// exchanged by all-to-all, the MLPs all-reduced. Trained on the same global
// batches, every step's loss, the final logits and AUC, and the tables and
// optimizer state of the checkpoint the ranks write together match one
// process with the whole batch, within the rounding of sums taken in
// another order.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/eval/auc.h"
#include "reference/models/dlrm.h"
#include "reference/optim/adagrad.h"
#include "reference/trainer/trainer.h"
#include "tests/dist/mpi_gtest.h"

namespace mlperf::models {

dist::Communicator* g_comm = nullptr;

namespace {

namespace fs = std::filesystem;
using core::DType;

constexpr int64_t kGlobalBatch = 16, kSteps = 6;

DlrmConfig SmallConfig() {
  DlrmConfig c;
  c.table_rows = {50, 7, 300, 3, 120, 1000};
  c.multi_hot = {3, 1, 5, 2, 1, 8};
  c.row_wise_tables = {3, 5};
  c.embedding_dim = 8;
  c.bottom_mlp = {16, 8};
  c.low_rank = 4;
  c.cross_layers = 2;
  c.top_mlp = {16, 1};
  c.embedding_lr = 0.05f;  // large enough that the tables move visibly
  return c;
}

// A global batch of random samples; rank r's are rows [r B, (r + 1) B).
OwnedBatch GlobalBatch(const DlrmConfig& c, uint64_t step) {
  OwnedBatch owned;
  auto bits = [step](uint64_t stream, int64_t i) {
    return core::PhiloxBits(step, stream, static_cast<uint64_t>(i));
  };
  float* dense = owned.Add({kGlobalBatch, c.dense_features}, DType::kF32).f32();
  for (int64_t i = 0; i < kGlobalBatch * c.dense_features; ++i)
    dense[i] = static_cast<float>(bits(0, i) % 1000) / 250.0f;
  for (int64_t t = 0; t < c.tables(); ++t) {
    auto* ids = owned.Add({kGlobalBatch, c.multi_hot[t]}, DType::kI32).as<int32_t>();
    for (int64_t i = 0; i < kGlobalBatch * c.multi_hot[t]; ++i)
      ids[i] = static_cast<int32_t>(bits(1 + static_cast<uint64_t>(t), i) %
                                    static_cast<uint64_t>(c.table_rows[t]));
  }
  float* labels = owned.Add({kGlobalBatch}, DType::kF32).f32();
  for (int64_t i = 0; i < kGlobalBatch; ++i) labels[i] = static_cast<float>(bits(99, i) % 2);
  owned.batch.count = kGlobalBatch;
  return owned;
}

Batch Slice(const Batch& global, int rank, int64_t batch) {
  Batch local{.count = batch};
  for (const core::Tensor& t : global.inputs) {
    const int64_t row = t.numel() / t.dim(0);
    local.inputs.emplace_back(
        static_cast<std::byte*>(t.data()) + rank * batch * row * core::DTypeSize(t.dtype()),
        t.shape().With(0, batch), t.dtype());
  }
  return local;
}

double MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  return worst;
}

std::unique_ptr<train::Trainer> MakeTrainer(Dlrm& model, dist::Communicator& comm) {
  return std::make_unique<train::Trainer>(
      model,
      std::make_unique<optim::Adagrad>(optim::AdagradOptions{.epsilon = 1e-8f}, model.slices()),
      std::make_unique<optim::ConstantRate>(0.05), train::TrainerConfig{}, comm);
}

TEST(DlrmRanks, ShardedTrainingMatchesOneProcess) {
  dist::Communicator& comm = *g_comm;
  const int world = comm.world_size(), rank = comm.rank();
  const int64_t local = kGlobalBatch / world;
  const DlrmConfig config = SmallConfig();
  Dlrm sharded(config, local, 7, {.rank = rank, .world_size = world, .comm = &comm});
  Dlrm whole(config, kGlobalBatch, 7);
  std::unique_ptr<dist::Communicator> single = dist::MakeSingleProcessCommunicator();
  std::unique_ptr<train::Trainer> sharded_trainer = MakeTrainer(sharded, comm);
  std::unique_ptr<train::Trainer> whole_trainer = MakeTrainer(whole, *single);

  // The layout: rows R r / W to R (r + 1) / W of the row-wise tables, the
  // others whole on their owner and absent elsewhere.
  const EmbeddingSharding& plan = sharded.sharding();
  for (int64_t t = 0; t < config.tables(); ++t) {
    const int64_t rows = config.table_rows[t];
    const int64_t expected = plan.row_wise(t) ? rows * (rank + 1) / world - rows * rank / world
                             : plan.owner[t] == rank ? rows
                                                     : 0;
    EXPECT_EQ(sharded.table(t).dim(0), expected) << "table " << t;
    // Initialised as the rows of the whole table.
    const std::vector<float> mine = sharded.ToHost(sharded.table(t)),
                             all = whole.ToHost(whole.table(t));
    const int64_t first = plan.ShardOf(t, rank).first_row * config.embedding_dim;
    EXPECT_TRUE(std::equal(mine.begin(), mine.end(), all.begin() + first)) << "table " << t;
  }
  EXPECT_TRUE(plan.row_wise(3) && plan.row_wise(5));
  // The memory plan is this rank's arenas, measured without allocating.
  const DlrmMemory memory = Dlrm::PlanMemory(config, local, rank, world);
  EXPECT_EQ(memory.embeddings, static_cast<int64_t>(sharded.buffers().size_bytes()));
  EXPECT_EQ(memory.dense, static_cast<int64_t>(2 * sharded.parameters().size_bytes() +
                                               sharded.gradients().size_bytes()));

  for (int64_t step = 0; step < kSteps; ++step) {
    const OwnedBatch global = GlobalBatch(config, static_cast<uint64_t>(step));
    float loss = sharded_trainer->TrainStep(Slice(global.batch, rank, local));
    comm.AllReduceSum(&loss, 1);
    const float expected = whole_trainer->TrainStep(global.batch);
    EXPECT_NEAR(loss / static_cast<float>(world), expected, 2e-6) << "step " << step;
  }

  // Inference: every rank's logits are the whole batch's rows of its samples.
  const OwnedBatch test = GlobalBatch(config, 1000);
  eval::AucEvaluator sharded_auc(
      sharded, [&](const Batch& b) -> const core::Tensor& { return sharded.Predict(b); });
  eval::AucEvaluator whole_auc(
      whole, [&](const Batch& b) -> const core::Tensor& { return whole.Predict(b); });
  sharded_auc.Start();
  whole_auc.Start();
  sharded_auc.Add(Slice(test.batch, rank, local));
  whole_auc.Add(test.batch);
  const std::vector<float> logits = sharded.ToHost(sharded.logits());
  const std::vector<float> all_logits = whole.ToHost(whole.logits());
  EXPECT_LT(MaxDifference(logits, std::vector<float>(all_logits.begin() + rank * local,
                                                     all_logits.begin() + (rank + 1) * local)),
            1e-5);
  EXPECT_NEAR(sharded_auc.Finish(comm), whole_auc.Finish(*single), 1e-12);

  // Written by every rank together (rank 0 writes the file), read by one
  // process: the tables whole, with their Adagrad sums, and the MLPs'.
  float pid = rank == 0 ? static_cast<float>(getpid()) : 0.0f;
  comm.Broadcast(&pid, 1, 0);
  const fs::path path = fs::temp_directory_path() /
                        fmt::format("dlrm_ranks_{}_{}.safetensors", world, static_cast<int>(pid));
  ASSERT_TRUE(sharded_trainer->SaveCheckpoint(path.string()).ok());
  comm.Barrier();
  Dlrm loaded(config, kGlobalBatch, 99);
  std::unique_ptr<train::Trainer> loaded_trainer = MakeTrainer(loaded, *single);
  ASSERT_TRUE(loaded_trainer->LoadCheckpoint(path.string()).ok());
  comm.Barrier();
  if (rank == 0) fs::remove(path);
  const Dlrm fresh(config, kGlobalBatch, 7);
  for (int64_t t = 0; t < config.tables(); ++t) {
    EXPECT_LT(MaxDifference(loaded.ToHost(loaded.table(t)), whole.ToHost(whole.table(t))), 1e-5)
        << "table " << t;
    EXPECT_LT(MaxDifference(loaded.ToHost(loaded.table_sum(t)), whole.ToHost(whole.table_sum(t))),
              1e-5)
        << "table " << t;
  }
  // Training moved the tables (so the comparison above could fail).
  EXPECT_GT(MaxDifference(whole.ToHost(whole.table(5)), fresh.ToHost(fresh.table(5))), 1e-3);
  EXPECT_LT(MaxDifference(loaded.ParametersToHost(), whole.ParametersToHost()), 1e-5);
  EXPECT_LT(MaxDifference(loaded_trainer->OptimizerStateToHost("sum"),
                          whole_trainer->OptimizerStateToHost("sum")),
            1e-5);
}

}  // namespace
}  // namespace mlperf::models

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::models::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
