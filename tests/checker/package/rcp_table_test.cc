#include "checker/package/rcp_table.h"

#include <cmath>
#include <string>
#include <vector>

#include "checker/package/rcp_min_epochs.h"
#include "checker/package/student_t.h"
#include "gtest/gtest.h"

namespace mlperf::package {
namespace {

std::vector<int64_t> BatchSizes(const std::vector<RcpRecord>& records) {
  std::vector<int64_t> out;
  for (const RcpRecord& r : records) out.push_back(r.global_batch_size);
  return out;
}

// A resnet table whose olympic means are the given values (three equal runs
// per record, so stdev 0 and min_epochs == mean).
std::string Table(const std::vector<std::pair<int, int>>& bs_and_epochs) {
  std::string records;
  for (const auto& [bs, e] : bs_and_epochs) {
    if (!records.empty()) records += ",";
    records += "{\"name\": \"r" + std::to_string(bs) +
               "\", \"benchmark\": \"resnet\", \"global_batch_size\": " + std::to_string(bs) +
               ", \"converge\": [" + std::to_string(e) + "," + std::to_string(e) + "," +
               std::to_string(e) + "]}";
  }
  return "{\"ruleset\": \"3.0.0\", \"benchmark\": \"resnet\", \"records\": [" + records + "]}";
}

TEST(RcpTable, ResnetStatisticsMatchTheOfficialChecker) {
  absl::StatusOr<RcpTable> t = RcpTable::Embedded("3.0.0", "resnet");
  ASSERT_TRUE(t.ok()) << t.status();
  const RcpRecord& r = t->full().front();  // resnet_ref_1632, spec 6.4
  EXPECT_EQ(r.global_batch_size, 1632);
  EXPECT_EQ(r.mean, 35);
  EXPECT_EQ(r.stdev, 1.0846522890932808);
  EXPECT_EQ(r.min_epochs, 33.80234241485596);
  EXPECT_EQ(r.max_speedup, 1.0354312009045172);
  // HEAD prunes by mean: 32768 stays (rc2 would drop it).
  EXPECT_EQ(BatchSizes(t->pruned()), (std::vector<int64_t>{1632, 3264, 32768, 49152, 67840}));
}

TEST(RcpTable, InterpolationIsLinearInMeanAndStdev) {
  absl::StatusOr<RcpTable> t = RcpTable::Embedded("3.0.0", "resnet");
  ASSERT_TRUE(t.ok());
  const RcpRecord r = t->Interpolate(3200, t->full()[0], t->full()[1]);
  // The verified v3.0 NVIDIA resnet record (spec 6.5).
  EXPECT_EQ(r.mean, 35.14781297134238);
  EXPECT_EQ(r.stdev, 0.7615205287955134);
  EXPECT_EQ(r.min_epochs, 34.24757797362038);
  EXPECT_EQ(r.max_speedup, 1.0262860923600325);
  EXPECT_EQ(r.name, "resnet_interp_3200");
  EXPECT_TRUE(r.interpolated);
}

TEST(RcpTable, PruningDropsSmallerBatchesThanTheFastestAndSlowMiddles) {
  // Fastest mean at 200; 100 goes. 300 (50) is slower than the line from 200
  // (30) to 400 (40): pruned. 400 then sits on no line above it: kept.
  absl::StatusOr<RcpTable> t =
      RcpTable::FromJson(Table({{100, 35}, {200, 30}, {300, 50}, {400, 40}, {800, 60}}), "t");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(BatchSizes(t->full()), (std::vector<int64_t>{100, 200, 300, 400, 800}));
  EXPECT_EQ(BatchSizes(t->pruned()), (std::vector<int64_t>{200, 400, 800}));
}

TEST(RcpTable, PruningDoesNotBacktrack) {
  // Removing 300 makes 200 lie above the new line 100..400, but the official
  // loop does not look back.
  absl::StatusOr<RcpTable> t =
      RcpTable::FromJson(Table({{100, 10}, {200, 21}, {300, 40}, {400, 41}}), "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(BatchSizes(t->pruned()), (std::vector<int64_t>{100, 200, 400}));
  // The lower convex envelope re-tests 200 and drops it (issue #368's point).
  EXPECT_EQ(BatchSizes(t->envelope()), (std::vector<int64_t>{100, 400}));
}

TEST(RcpTable, EnvelopeEqualsPruningWhenNothingNeedsARetest) {
  absl::StatusOr<RcpTable> t =
      RcpTable::FromJson(Table({{100, 35}, {200, 30}, {300, 50}, {400, 40}, {800, 60}}), "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(BatchSizes(t->envelope()), BatchSizes(t->pruned()));
}

TEST(RcpTable, OfficialBert30PruningKeepsPointsAboveTheEnvelope) {
  // bert 3.0.0 (spec 6.4): 6144 and 6912 survive the official pass because
  // each was tested before its slower right neighbour 8192 was removed.
  absl::StatusOr<RcpTable> t = RcpTable::Embedded("3.0.0", "bert");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(BatchSizes(t->pruned()),
            (std::vector<int64_t>{448, 4608, 6144, 6912, 12288, 13056, 16384}));
  EXPECT_EQ(BatchSizes(t->envelope()), (std::vector<int64_t>{448, 4608, 12288, 13056, 16384}));
}

TEST(RcpTable, RecordsSortByBatchSizeStably) {
  absl::StatusOr<RcpTable> t = RcpTable::FromJson(Table({{400, 40}, {100, 10}, {200, 20}}), "t");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(BatchSizes(t->full()), (std::vector<int64_t>{100, 200, 400}));
}

TEST(RcpTable, RejectsMalformedData) {
  EXPECT_FALSE(RcpTable::FromJson("{}", "t").ok());
  EXPECT_FALSE(
      RcpTable::FromJson("{\"ruleset\": \"3.0.0\", \"benchmark\": \"dlrm\", \"records\": []}", "t")
          .ok());
  EXPECT_FALSE(RcpTable::FromJson(
                   "{\"ruleset\": \"3.0.0\", \"benchmark\": \"resnet\", \"records\": "
                   "[{\"name\": \"x\", \"benchmark\": \"resnet\", \"global_batch_size\": 1.5, "
                   "\"converge\": [1]}]}",
                   "t")
                   .ok());
  EXPECT_EQ(RcpTable::Embedded("3.0.0", "llama2_70b_lora").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(RcpTable, EveryEmbeddedTableLoadsExceptPreDcnv2Dlrm) {
  int loaded = 0;
  for (const auto& [ruleset, benchmark] : EmbeddedRcpTables()) {
    absl::StatusOr<RcpTable> t = RcpTable::Embedded(ruleset, benchmark);
    // The official checker has no submission run count for "dlrm" either.
    EXPECT_EQ(t.ok(), benchmark != "dlrm") << ruleset << "/" << benchmark;
    if (!t.ok()) continue;
    ++loaded;
    EXPECT_FALSE(t->pruned().empty()) << ruleset << "/" << benchmark;
    EXPECT_TRUE(RcpCheckerSupportsRuleset(ruleset));
  }
  EXPECT_GT(loaded, 70);
}

TEST(RcpMinEpochs, ZeroStdevAcceptsTheMeanAndBisectionStaysBelowIt) {
  EXPECT_EQ(RcpMinEpochs(40, 0, 8, 5), 40);
  // The exact boundary of the one-sided test with n_ref = 8 and 5 - 2 submission runs.
  const double boundary =
      40 + StudentTQuantile(kRcpAlpha, 8 + 3 - 2) * std::sqrt(1.0 / 8 + 1.0 / 3);
  EXPECT_NEAR(RcpMinEpochs(40, 1, 8, 5), boundary, kRcpMinEpochsTolerance);
}

}  // namespace
}  // namespace mlperf::package
