// Label `dist`: the collective watchdog under `mpirun -np 2` on one machine.
// The ranks learn each other's liveness ports; a live peer answers; a wait
// longer than the timeout on a peer that is only slow goes on (the process
// survives the check). Lost peers: multinode_silent_link*.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <thread>

#include "reference/dist/mpi_communicator.h"
#include "runtime/collective_bench.h"
#include "runtime/collective_watchdog.h"
#include "tests/dist/mpi_gtest.h"

namespace mlperf::runtime {
namespace {

dist::Communicator* g_comm = nullptr;

TEST(CollectiveWatchdogTest, RanksKnowEachOthersPortsAndLivePeersAnswer) {
  absl::StatusOr<std::unique_ptr<CollectiveWatchdog>> dog =
      CollectiveWatchdog::Start(*g_comm, std::chrono::milliseconds(1000), "test");
  ASSERT_TRUE(dog.ok()) << dog.status();
  const std::vector<PeerAddress>& peers = (*dog)->peers();
  ASSERT_EQ(peers.size(), static_cast<size_t>(g_comm->world_size() - 1));
  for (const PeerAddress& p : peers) {
    EXPECT_NE(p.rank, g_comm->rank());
    EXPECT_EQ(p.node, NodeName());
    EXPECT_GT(p.port, 0);
    EXPECT_FALSE(p.addresses.empty());
  }
  EXPECT_TRUE((*dog)->SilentPeers(std::chrono::milliseconds(2000)).empty());
  // Through the watched view: the sum is right, and rank 1 waits 2.5 s (over
  // twice the timeout) in a barrier for rank 0, which is slow, not lost.
  const std::unique_ptr<dist::Communicator> watched = (*dog)->Watch(*g_comm);
  float x = 1.0f;
  watched->AllReduceSum(&x, 1);
  EXPECT_EQ(x, static_cast<float>(g_comm->world_size()));
  const auto started = std::chrono::steady_clock::now();
  if (g_comm->rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  watched->Barrier();
  EXPECT_GE(std::chrono::steady_clock::now() - started, std::chrono::milliseconds(2400));
}

}  // namespace
}  // namespace mlperf::runtime

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  std::unique_ptr<mlperf::dist::Communicator> comm = mlperf::dist::MakeMpiCommunicator();
  mlperf::runtime::g_comm = comm.get();
  return mlperf::test::RunTestsOnEveryRank(*comm);
}
