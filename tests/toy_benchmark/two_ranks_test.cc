// Two MPI ranks against one process (run under mpirun -np 2): the toy's
// category table is sharded by rows, each rank holding and updating its own
// half, never all-reduced; trained on the same global batches, the two ranks
// end where one process with the doubled batch ends, and the checkpoint they
// write together holds the table whole, so one process loads it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "fmt/format.h"
#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/trainer/trainer.h"
#include "tests/dist/mpi_gtest.h"
#include "tests/toy_benchmark/toy.h"

namespace mlperf::toy {

dist::Communicator* g_comm = nullptr;

namespace {

namespace fs = std::filesystem;

double MaxDifference(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
  return worst;
}

TEST(ToyTwoRanks, ShardedTrainingMatchesOneProcessAndCheckpointsWhole) {
  dist::Communicator& comm = *g_comm;
  ASSERT_EQ(comm.world_size(), 2) << "run under mpirun -np 2";
  constexpr int64_t kLocalBatch = 16, kSteps = 12;
  std::unique_ptr<models::Model> parallel =
      MakeToyModel({.rank = comm.rank(), .world_size = 2, .comm = &comm}, kLocalBatch, 5);
  std::unique_ptr<models::Model> serial = MakeToyModel({}, 2 * kLocalBatch, 5);
  std::unique_ptr<dist::Communicator> single = dist::MakeSingleProcessCommunicator();
  train::Trainer parallel_trainer(*parallel, ToyOptimizer(*parallel), ToySchedule(kSteps), {},
                                  comm);
  train::Trainer serial_trainer(*serial, ToyOptimizer(*serial), ToySchedule(kSteps), {}, *single);
  // This rank holds half of the table's rows.
  const layers::Parameter& shard = parallel->parameter_tensors().back();
  ASSERT_TRUE(shard.sharding.sharded());
  EXPECT_EQ(shard.value.dim(0), kCategories / 2);
  EXPECT_EQ(shard.sharding.first_row, comm.rank() * kCategories / 2);

  std::unique_ptr<benchmarks::DataPipeline> mine =
      ToyPipeline(false, 0, 512, kLocalBatch, comm.rank(), 2);
  std::unique_ptr<benchmarks::DataPipeline> whole =
      ToyPipeline(false, 0, 512, 2 * kLocalBatch, 0, 1);
  const std::vector<float> start = serial->ParametersToHost();
  for (int64_t step = 0; step < kSteps; ++step) {
    models::Batch a, b;
    ASSERT_TRUE(*mine->Next(&a));
    ASSERT_TRUE(*whole->Next(&b));
    const float loss_parallel = parallel_trainer.TrainStep(a);
    const float loss_serial = serial_trainer.TrainStep(b);
    EXPECT_NEAR(loss_parallel, loss_serial, 1e-5) << "step " << step;
  }
  EXPECT_GT(MaxDifference(start, serial->ParametersToHost()), 1e-2);  // training moved them

  // Written by both ranks together (rank 0 writes the file), read by one.
  float pid = comm.rank() == 0 ? static_cast<float>(getpid()) : 0.0f;
  comm.Broadcast(&pid, 1, 0);
  const fs::path path = fs::temp_directory_path() /
                        fmt::format("toy_two_ranks_{}.safetensors", static_cast<int>(pid));
  ASSERT_TRUE(parallel_trainer.SaveCheckpoint(path.string()).ok());
  comm.Barrier();
  // The frozen features are the run's starting point, not the trainer's
  // state: the same seed; the trainable weights come from the file.
  std::unique_ptr<models::Model> loaded = MakeToyModel({}, 2 * kLocalBatch, 5);
  loaded->ParametersFromHost(std::vector<float>(loaded->parameters().size(), 0.0f));
  train::Trainer loaded_trainer(*loaded, ToyOptimizer(*loaded), ToySchedule(kSteps), {}, *single);
  ASSERT_TRUE(loaded_trainer.LoadCheckpoint(path.string()).ok());
  comm.Barrier();
  if (comm.rank() == 0) fs::remove(path);
  EXPECT_EQ(loaded_trainer.step(), kSteps);
  // The whole table, head and AdamW moments, as one process trained them
  // (the sums over ranks differ from one process's in the last bits only).
  EXPECT_LT(MaxDifference(loaded->ParametersToHost(), serial->ParametersToHost()), 1e-5);
  EXPECT_GT(MaxDifference(loaded->ParametersToHost(), start), 1e-2);
  for (const char* state : {"exp_avg", "exp_avg_sq"}) {
    EXPECT_LT(MaxDifference(loaded_trainer.OptimizerStateToHost(state),
                            serial_trainer.OptimizerStateToHost(state)),
              1e-5)
        << state;
  }
  EXPECT_EQ(loaded->FrozenToHost(), serial->FrozenToHost());
}

}  // namespace
}  // namespace mlperf::toy

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::toy::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
