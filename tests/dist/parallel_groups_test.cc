// Label `dist`: under `mpirun -np 4`, the world split into Megatron's
// tensor- and data-parallel groups for every tensor size that divides it:
// each rank's place in both, and sums that stay within each group; a size
// that does not divide the world is refused.
#include "reference/dist/parallel_groups.h"

#include <gtest/gtest.h>

#include <memory>

#include "reference/dist/communicator.h"
#include "reference/dist/mpi_communicator.h"
#include "tests/dist/mpi_gtest.h"

namespace mlperf::dist {

Communicator* g_comm = nullptr;

namespace {

TEST(ParallelGroups, ConsecutiveRanksSplitOneModel) {
  Communicator& world = *g_comm;
  const int rank = world.rank(), ranks = world.world_size();
  for (int tensor = 1; tensor <= ranks; ++tensor) {
    if (ranks % tensor != 0) continue;
    SCOPED_TRACE(testing::Message() << "tensor " << tensor << " on rank " << rank);
    absl::StatusOr<ParallelGroups> groups = ParallelGroups::Split(world, tensor);
    ASSERT_TRUE(groups.ok()) << groups.status();
    EXPECT_EQ(groups->tensor().world_size(), tensor);
    EXPECT_EQ(groups->tensor().rank(), rank % tensor);
    EXPECT_EQ(groups->data().world_size(), ranks / tensor);
    EXPECT_EQ(groups->data().rank(), rank / tensor);
    // A tensor group sums its own consecutive ranks; a data group the
    // ranks that hold the same slice.
    float in_tensor = static_cast<float>(rank), in_data = static_cast<float>(rank);
    groups->tensor().AllReduceSum(&in_tensor, 1);
    groups->data().AllReduceSum(&in_data, 1);
    const int first = rank / tensor * tensor;
    EXPECT_EQ(in_tensor, static_cast<float>(tensor * first + tensor * (tensor - 1) / 2));
    float want = 0;
    for (int r = rank % tensor; r < ranks; r += tensor) want += static_cast<float>(r);
    EXPECT_EQ(in_data, want);
  }
}

TEST(ParallelGroups, RefusesASizeThatDoesNotDivideTheWorld) {
  absl::StatusOr<ParallelGroups> groups = ParallelGroups::Split(*g_comm, g_comm->world_size() + 1);
  ASSERT_FALSE(groups.ok());
  EXPECT_EQ(groups.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(groups.status().message().find("do not divide"), std::string_view::npos);
}

}  // namespace
}  // namespace mlperf::dist

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::dist::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
