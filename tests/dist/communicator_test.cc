// The single-process communicator and the bucket plan.
#include "reference/dist/communicator.h"

#include <gtest/gtest.h>

namespace mlperf::dist {
namespace {

TEST(BucketTest, BucketsCoverTheArenaOnceFromTheEnd) {
  const std::vector<Bucket> b = PlanBuckets(100, 30);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].begin, 70);
  EXPECT_EQ(b[0].end, 100);
  EXPECT_EQ(b[3].begin, 0);
  EXPECT_EQ(b[3].end, 10);
  int64_t covered = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    covered += b[i].end - b[i].begin;
    if (i > 0) {
      EXPECT_EQ(b[i].end, b[i - 1].begin);
    }
  }
  EXPECT_EQ(covered, 100);
}

TEST(SingleProcessTest, CollectivesAreTheIdentity) {
  auto comm = MakeSingleProcessCommunicator();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->world_size(), 1);
  std::vector<float> g = {1.0f, 2.0f, 3.0f};
  AllReduceGradients(*comm, g.data(), PlanBuckets(3, 2));
  comm->AllReduceSum(g.data(), 3);
  EXPECT_EQ(g, (std::vector<float>{1.0f, 2.0f, 3.0f}));
  // All-to-all: the one block goes to itself.
  std::vector<float> back(3, 0.0f);
  const std::vector<int64_t> bytes = {12};
  comm->AllToAll(g.data(), bytes, back.data(), bytes);
  EXPECT_EQ(back, g);
  // All-gather and reduce-scatter: a copy.
  std::vector<float> gathered(3, 0.0f), scattered(3, 0.0f);
  comm->AllGather(g.data(), gathered.data(), 12);
  EXPECT_EQ(gathered, g);
  comm->ReduceScatterSum(g.data(), scattered.data(), 3);
  EXPECT_EQ(scattered, g);
}

}  // namespace
}  // namespace mlperf::dist
