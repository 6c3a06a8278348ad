// The 3D U-Net pipeline over prepared cases on 1 to 3 ranks: every epoch
// each rank gets whole batches of distinct training cases, no case twice
// across ranks, world * floor(floor(N / world) / batch) * batch samples in
// all; a new order every epoch; evaluation gives each case to exactly one
// rank, whole; the batches do not depend on the thread count.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "datasets/kits19/loader.h"
#include "datasets/npy.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

using datasets::NpyArray;
using datasets::ReadNpy;
using datasets::ReadNpyHeader;
using datasets::WriteNpy;

namespace fs = std::filesystem;

// Cases 0..13 (0, 3, 5, 6 and 12 evaluate): 9 training, 5 evaluation cases
// of 10 x 9 x 8 voxels, case c's image filled with c and a labelled blob.
// A folder of this process's own: ctest runs the cases of this file as
// parallel processes.
fs::path WriteCases() {
  const fs::path d = fs::path(::testing::TempDir()) / fmt::format("kits19_loader_{}", ::getpid());
  fs::remove_all(d);
  fs::create_directories(d);
  const std::vector<int64_t> shape = {1, 10, 9, 8};
  for (int c = 0; c < 14; ++c) {
    std::vector<float> image(720, static_cast<float>(c));
    std::vector<uint8_t> label(720, 0);
    for (int i = 300; i < 340; ++i) label[i] = static_cast<uint8_t>(1 + c % 2);
    const std::string name = fmt::format("case_{:05d}", c);
    EXPECT_TRUE(WriteNpy(d / (name + "_x.npy"), "<f4", shape, image.data()).ok());
    EXPECT_TRUE(WriteNpy(d / (name + "_y.npy"), "|u1", shape, label.data()).ok());
  }
  return d;
}

VolumeLoaderOptions Options(const fs::path& root, bool train, int rank, int world, int threads) {
  VolumeLoaderOptions o;
  o.root = root;
  o.train = train;
  o.batch_size = 2;
  o.rank = rank;
  o.world_size = world;
  o.seed = 11;
  o.threads = threads;
  o.augment.patch = {8, 8, 8};
  return o;
}

TEST(Kits19LoaderTest, EveryEpochSplitsDistinctCasesOverOneToThreeRanks) {
  const fs::path root = WriteCases();
  for (int world = 1; world <= 3; ++world) {
    std::vector<std::unique_ptr<VolumeLoader>> ranks;
    for (int r = 0; r < world; ++r) {
      absl::StatusOr<std::unique_ptr<VolumeLoader>> l =
          VolumeLoader::Open(Options(root, true, r, world, 2));
      ASSERT_TRUE(l.ok()) << l.status();
      ranks.push_back(std::move(*l));
    }
    ASSERT_EQ(ranks[0]->size(), 9);
    const int64_t spe = SamplesPerEpoch(9, world, 2);
    EXPECT_EQ(spe, world * (9 / world / 2) * 2);
    std::set<std::vector<int64_t>> orders;
    for (int epoch = 0; epoch < 4; ++epoch) {
      std::vector<int64_t> seen;
      for (int r = 0; r < world; ++r) {
        for (int64_t b = 0; b < ranks[r]->batches_per_epoch(); ++b) {
          VolumeBatch batch;
          absl::StatusOr<bool> got = ranks[r]->Next(&batch);
          ASSERT_TRUE(got.ok() && *got);
          EXPECT_EQ(batch.epoch, epoch);
          ASSERT_EQ(batch.count, 2);
          for (int s = 0; s < 2; ++s) {
            // The patch comes from the case it names (images hold the case id,
            // scaled by brightness or with noise at most).
            const int64_t c = batch.cases[s];
            const int id = std::stoi(ranks[r]->case_names()[c].substr(5));
            const float v = batch.image[s * 512 + 100];
            EXPECT_NEAR(v, id, 1.5 * id + 0.6) << "case " << id;
            seen.push_back(c);
          }
        }
      }
      EXPECT_EQ(static_cast<int64_t>(seen.size()), spe) << "world " << world;
      EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), seen.size())
          << "a case twice in epoch " << epoch << ", world " << world;
      orders.insert(seen);
    }
    EXPECT_GT(orders.size(), 2u) << "the order should change between epochs";
  }
}

TEST(Kits19LoaderTest, EvaluationGivesEachCaseToOneRankWhole) {
  const fs::path root = WriteCases();
  for (int world = 1; world <= 3; ++world) {
    std::map<int64_t, int> counts;
    for (int r = 0; r < world; ++r) {
      absl::StatusOr<std::unique_ptr<VolumeLoader>> l =
          VolumeLoader::Open(Options(root, false, r, world, 1));
      ASSERT_TRUE(l.ok()) << l.status();
      EXPECT_EQ((*l)->size(), 5);
      for (int pass = 0; pass < 2; ++pass) {
        (*l)->StartEval();
        VolumeBatch batch;
        while (true) {
          absl::StatusOr<bool> got = (*l)->Next(&batch);
          ASSERT_TRUE(got.ok());
          if (!*got) break;
          EXPECT_EQ(batch.count, 1);
          EXPECT_EQ(batch.shape, (std::array<int64_t, 3>{10, 9, 8}));
          EXPECT_TRUE(batch.labels_u8);
          const int id = std::stoi((*l)->case_names()[batch.cases[0]].substr(5));
          EXPECT_EQ(batch.image[0], static_cast<float>(id));
          if (pass == 0) ++counts[batch.cases[0]];
        }
      }
    }
    ASSERT_EQ(counts.size(), 5u) << "world " << world;
    for (auto [c, n] : counts) EXPECT_EQ(n, 1) << "case " << c << " world " << world;
  }
}

TEST(Kits19LoaderTest, BatchesDoNotDependOnTheThreadCount) {
  const fs::path root = WriteCases();
  std::vector<std::vector<float>> images[2];
  for (int t : {0, 1}) {
    absl::StatusOr<std::unique_ptr<VolumeLoader>> l =
        VolumeLoader::Open(Options(root, true, 0, 1, t == 0 ? 1 : 3));
    ASSERT_TRUE(l.ok()) << l.status();
    for (int b = 0; b < 12; ++b) {
      VolumeBatch batch;
      ASSERT_TRUE(*(*l)->Next(&batch));
      images[t].emplace_back(batch.image, batch.image + 2 * 512);
    }
  }
  EXPECT_EQ(images[0], images[1]);
}

TEST(Kits19LoaderTest, PatchLargerThanACaseIsAnErrorNamingIt) {
  const fs::path root = WriteCases();
  VolumeLoaderOptions o = Options(root, true, 0, 1, 1);
  o.augment.patch = {16, 16, 16};
  absl::StatusOr<std::unique_ptr<VolumeLoader>> l = VolumeLoader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("case_00001_x.npy: shape 10x9x8"), std::string::npos)
      << l.status();
}

// Cases that would not fit the process's memory are refused before any is
// read, with one line saying how much they need.
TEST(Kits19LoaderTest, CasesBeyondTheMemoryBudgetAreRefusedUnread) {
  const fs::path root = WriteCases();
  VolumeLoaderOptions o = Options(root, true, 0, 1, 1);
  o.memory_budget = 1024;
  absl::StatusOr<std::unique_ptr<VolumeLoader>> l = VolumeLoader::Open(o);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(l.status().message().find("more than the 0.0 GiB this process has"), std::string::npos)
      << l.status();
  o.memory_budget = int64_t{1} << 30;
  EXPECT_TRUE(VolumeLoader::Open(o).ok());
}

}  // namespace
}  // namespace mlperf::kits19
