// The collective benchmark's arithmetic (nccl-tests' bus factors, the size
// sweep, the round-robin pairing, the slow-rank rule) and a sweep in a world
// of one. Many ranks: run_benchmark_comm and multinode_preflight.
#include "runtime/collective_bench.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "reference/dist/communicator.h"

namespace mlperf::runtime {
namespace {

TEST(CollectiveBenchTest, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kAllToAll, 2), 0.5);
  EXPECT_DOUBLE_EQ(BusFactor(Collective::kAllReduce, 1), 0.0);
}

TEST(CollectiveBenchTest, SizesGrowByTheFactorUpToTheLargest) {
  EXPECT_EQ(MessageSizes(8, 64, 2), (std::vector<int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(MessageSizes(8, 100, 4), (std::vector<int64_t>{8, 32}));
  EXPECT_EQ(MessageSizes(1 << 30, int64_t{16} << 30, 1024), (std::vector<int64_t>{1 << 30}));
  EXPECT_EQ(MessageSizes(5, 5, 2), (std::vector<int64_t>{5}));
}

TEST(CollectiveBenchTest, ParsesCollectiveLists) {
  EXPECT_EQ(ParseCollectives("all")->size(), 4u);
  EXPECT_EQ(*ParseCollectives("all_to_all,all_reduce,all_to_all"),
            (std::vector<Collective>{Collective::kAllToAll, Collective::kAllReduce}));
  EXPECT_FALSE(ParseCollectives("all_sum").ok());
  EXPECT_FALSE(ParseCollectives("").ok());
}

TEST(CollectiveBenchTest, EveryPairMeetsOnceAndPartnersAgree) {
  for (int ranks = 1; ranks <= 9; ++ranks) {
    std::set<std::pair<int, int>> met;
    for (int round = 0; round < RoundRobinRounds(ranks); ++round) {
      for (int r = 0; r < ranks; ++r) {
        const int p = RoundRobinPartner(round, r, ranks);
        if (p < 0) continue;
        ASSERT_NE(p, r);
        ASSERT_EQ(RoundRobinPartner(round, p, ranks), r) << ranks << " ranks, round " << round;
        if (r < p) {
          ASSERT_TRUE(met.insert({r, p}).second) << r << "-" << p << " met twice";
        }
      }
    }
    EXPECT_EQ(met.size(), static_cast<size_t>(ranks * (ranks - 1) / 2)) << ranks << " ranks";
  }
}

TEST(CollectiveBenchTest, SlowRanksAreBelowTheFractionOfTheMedian) {
  const std::vector<RankLink> links = {
      {0, "a", 100e6, 2}, {1, "b", 90e6, 2}, {2, "c", 40e6, 2}, {3, "d", 110e6, 2}};
  // Median 95 MB/s: 40 is below half of it, 90 is not.
  const std::vector<RankLink> slow = SlowRanks(links, 0.5);
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_EQ(slow[0].node, "c");
  EXPECT_DOUBLE_EQ(MedianBandwidth(links), 95e6);
  EXPECT_EQ(SlowRanks(links, 0.95).size(), 2u);
  EXPECT_TRUE(SlowRanks(links, 0).empty());
  // One rank has no partner to measure: nothing to compare.
  EXPECT_TRUE(SlowRanks(std::vector<RankLink>{{0, "a", 0, 0}}, 0.5).empty());
}

TEST(CollectiveBenchTest, AWorldOfOneMeasuresEveryCollectiveAndChecksIt) {
  const std::unique_ptr<dist::Communicator> single = dist::MakeSingleProcessCommunicator();
  const RunComms comms{.control = single.get()};
  const std::vector<CollectiveResult> results = MeasureCollectives(
      comms, {.min_bytes = 2, .max_bytes = 1 << 12, .factor = 8, .warmup = 1, .iters = 2});
  // 2 bytes holds no float: sizes 16, 128, 1024 for each of the four.
  ASSERT_EQ(results.size(), 12u);
  for (const CollectiveResult& r : results) {
    EXPECT_EQ(r.wrong, 0) << CollectiveName(r.collective);
    EXPECT_EQ(r.count * 4, r.bytes);
    EXPECT_GT(r.seconds, 0);
    EXPECT_EQ(r.busbw, 0);  // nothing crosses a link in a world of one
  }
  const std::vector<RankLink> links = ProbeLinks(comms, 1024, 1);
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(links[0].partners, 0);
  EXPECT_EQ(links[0].node, NodeName());
}

TEST(CollectiveBenchTest, SizesAndRatesReadAsUnits) {
  EXPECT_EQ(Size(8), "8 B");
  EXPECT_EQ(Size(4 << 20), "4 MiB");
  EXPECT_EQ(Size(int64_t{1} << 30), "1 GiB");
  EXPECT_EQ(Size(1536), "1536 B");
  EXPECT_EQ(Size(3 << 19), "1.5 MiB");
  EXPECT_EQ(Size(22227060321), "20.7 GiB");
  EXPECT_EQ(Rate(1.5e9), "1.50 GB/s");
  EXPECT_EQ(Rate(120e6), "120.0 MB/s");
}

}  // namespace
}  // namespace mlperf::runtime
