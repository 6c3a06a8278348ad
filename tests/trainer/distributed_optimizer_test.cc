// The distributed optimizer under mpirun -np 1, 2 or 4: every rank steps its
// shard of AdamW's state on the reduce-scattered gradients of its own, with
// the global-norm clip over all shards, and all-gathers the weights. After
// five steps every rank's weights equal one AdamW (clipping itself) stepped
// on the ranks' averaged gradients, and each rank's moments cover its shard
// only.
#include "reference/optim/distributed_optimizer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "reference/core/arena.h"
#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/optim/adam.h"
#include "tests/dist/mpi_gtest.h"

namespace mlperf::optim {

dist::Communicator* g_comm = nullptr;

namespace {

constexpr int64_t kCount = 1037;
constexpr int kSteps = 5;

// Rank r's gradient at step k: norms from about 30 down to 2, so the clip
// acts, and different on every rank.
float Gradient(int rank, int step, int64_t i) {
  return static_cast<float>(((i * 7 + rank * 13 + step * 3) % 17) - 8) * 0.15f /
         static_cast<float>(1 + step * 3);
}

AdamOptions Recipe(float clip) {
  return {
      .beta1 = 0.9f, .beta2 = 0.95f, .epsilon = 1e-5f, .weight_decay = 0.1f, .max_grad_norm = clip};
}

// Carves an optimizer's state from an arena of its measured size.
std::unique_ptr<core::Arena> Carve(Optimizer& optimizer, int64_t count) {
  core::Arena measuring = core::Arena::Measuring(core::Device::kCpu);
  optimizer.Allocate(measuring, count);
  auto arena = std::make_unique<core::Arena>(core::Device::kCpu, measuring.used());
  optimizer.Allocate(*arena, count);
  return arena;
}

TEST(DistributedOptimizer, EqualsOneAdamWOnTheAveragedGradients) {
  dist::Communicator& comm = *g_comm;
  const int world = comm.world_size(), rank = comm.rank();
  const std::vector<TensorSlice> slices = {{.offset = 0, .numel = 500},
                                           {.offset = 500, .numel = 3, .no_weight_decay = true},
                                           {.offset = 503, .numel = kCount - 503}};
  Adam single(Recipe(1.0f), slices);
  DistributedOptimizer sharded(comm, slices, 1.0f, [](std::vector<TensorSlice> shard) {
    return std::make_unique<Adam>(Recipe(0.0f), std::move(shard));
  });
  const auto single_arena = Carve(single, kCount);
  const auto sharded_arena = Carve(sharded, kCount);
  // Each rank's moments cover its shard, about a world-th of the arena.
  const int64_t shard = sharded.shard_end() - sharded.shard_begin();
  EXPECT_EQ(shard, std::min<int64_t>(kCount, (rank + 1) * ((kCount + world - 1) / world)) -
                       std::min<int64_t>(kCount, rank * ((kCount + world - 1) / world)));
  for (const StateTensor& s : sharded.State()) {
    if (s.name != "adam_step") {
      EXPECT_EQ(s.tensor.numel(), shard) << s.name;
    }
  }

  std::vector<float> w(kCount), mine(kCount);
  for (int64_t i = 0; i < kCount; ++i) w[i] = 0.01f * static_cast<float>(i % 29) - 0.1f;
  mine = w;
  for (int step = 0; step < kSteps; ++step) {
    std::vector<float> average(kCount, 0.0f), own(kCount);
    for (int64_t i = 0; i < kCount; ++i) {
      double sum = 0.0;
      for (int r = 0; r < world; ++r) sum += Gradient(r, step, i);
      average[i] = static_cast<float>(sum / world);
      own[i] = Gradient(rank, step, i);
    }
    single.Step({.w = w.data(), .g = average.data(), .count = kCount, .lr = 0.01f});
    sharded.Step({.w = mine.data(), .g = own.data(), .count = kCount, .lr = 0.01f});
  }
  double worst = 0.0, moved = 0.0;
  for (int64_t i = 0; i < kCount; ++i) {
    worst = std::max(worst, std::fabs(double{mine[i]} - w[i]));
    moved = std::max(moved, std::fabs(double{w[i]} - (0.01 * (i % 29) - 0.1)));
  }
  EXPECT_LT(worst, 1e-6) << "on rank " << rank;
  EXPECT_GT(moved, 1e-3);
}

}  // namespace
}  // namespace mlperf::optim

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::optim::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
