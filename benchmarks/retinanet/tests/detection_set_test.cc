// The OpenImages reader and RetinaNet's batches: samples against the
// reference's pipeline in PyTorch (tests/retinanet/detection_set_oracle.py)
// on generated JPEGs with and without a flip, the bilinear resize against
// F.interpolate, evaluation images split exactly once over 1 to 3 ranks,
// training epochs as permutations shared by the ranks, and the errors.
#include "datasets/openimages/detection_set.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "benchmarks/retinanet/pipeline.h"
#include "datasets/openimages/generated.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "tests/core/parity_util.h"

namespace mlperf::benchmarks::retinanet {
namespace {

namespace fs = std::filesystem;
namespace oi = datasets::openimages;

class DetectionSetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / fmt::format("detection_set_{}", ::getpid());
    ASSERT_TRUE(oi::WriteGeneratedShapes(root_, {.train_images = 6, .validation_images = 5}).ok());
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path root_;
};

TEST_F(DetectionSetTest, SamplesMatchTheReferencesPipeline) {
  if (!testing::PythonHas("torch, torchvision, PIL"))
    GTEST_SKIP() << "PyTorch, torchvision or PIL is missing for /usr/bin/python3";
  const int64_t size = 64;
  const std::string out = testing::TempPath("detection_set_oracle");
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/benchmarks/retinanet/tests/detection_set_oracle.py {} {} {}",
                  MLPERF_SOURCE_DIR, (root_ / "train").string(), size, out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto oracle = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(oracle.ok()) << oracle.status();
  absl::StatusOr<oi::DetectionSet> set = oi::DetectionSet::Open(root_ / "train");
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(set->size(), 6);
  std::vector<float> pixels(static_cast<size_t>(3 * size * size));
  for (int64_t i = 0; i < set->size(); ++i)
    for (int flip = 0; flip < 2; ++flip) {
      oi::DetectionSample sample;
      ASSERT_TRUE(set->Load(i, flip == 1, size, pixels.data(), &sample).ok());
      const std::vector<float> want = testing::Load(*oracle, fmt::format("image/{}/{}", i, flip));
      EXPECT_LT(testing::NormError(pixels, want), 1e-6) << i << " " << flip;
      const std::vector<float> boxes = testing::Load(*oracle, fmt::format("boxes/{}/{}", i, flip));
      ASSERT_EQ(sample.boxes.size() * 4, boxes.size()) << i;
      for (size_t k = 0; k < sample.boxes.size(); ++k)
        for (int c = 0; c < 4; ++c) EXPECT_FLOAT_EQ(sample.boxes[k][c], boxes[4 * k + c]) << i;
    }
  for (const auto& [name, h, w] :
       {std::tuple{"down", 100, 80}, std::tuple{"up", 30, 50}, std::tuple{"same", 64, 64}}) {
    const std::vector<float> in = testing::Load(*oracle, fmt::format("resize/{}/in", name));
    std::vector<float> ours(static_cast<size_t>(3 * size * size));
    oi::ResizeBilinear(in.data(), 3, h, w, ours.data(), size, size);
    EXPECT_LT(testing::NormError(ours, testing::Load(*oracle, fmt::format("resize/{}/out", name))),
              1e-6)
        << name;
  }
  fs::remove(out);
}

RunPlan Plan(int world, int64_t batch) {
  RunPlan plan;
  plan.world_size = world;
  plan.batch_per_rank = batch;
  plan.global_batch_size = batch * world;
  plan.loader_threads = 2;
  return plan;
}

TEST_F(DetectionSetTest, EvaluationImagesGoToExactlyOneRank) {
  auto set =
      std::make_shared<const oi::DetectionSet>(*oi::DetectionSet::Open(root_ / "validation"));
  for (int world = 1; world <= 3; ++world) {
    std::multiset<int32_t> seen;
    for (int rank = 0; rank < world; ++rank) {
      auto pipeline = MakeDetectionPipeline(set, true, 1, rank, Plan(world, 2),
                                            {.image_size = 32, .max_boxes = 3});
      pipeline->StartEval();
      models::Batch batch;
      while (*pipeline->Next(&batch)) {
        ASSERT_EQ(batch.inputs.size(), 4u);
        for (int64_t j = 0; j < batch.count; ++j) seen.insert(batch.inputs[3].as<int32_t>()[3 * j]);
      }
    }
    EXPECT_EQ(seen.size(), 5u) << world;
    EXPECT_EQ(std::set<int32_t>(seen.begin(), seen.end()).size(), 5u) << world;
  }
}

TEST_F(DetectionSetTest, TrainingEpochsArePermutationsSharedByTheRanks) {
  auto set = std::make_shared<const oi::DetectionSet>(*oi::DetectionSet::Open(root_ / "train"));
  // Two ranks of one image per step: 3 steps an epoch, every image once.
  std::vector<std::unique_ptr<DataPipeline>> ranks;
  for (int rank = 0; rank < 2; ++rank)
    ranks.push_back(
        MakeDetectionPipeline(set, false, 7, rank, Plan(2, 1), {.image_size = 32, .max_boxes = 3}));
  for (int epoch = 0; epoch < 2; ++epoch) {
    std::set<std::vector<float>> images;
    for (int step = 0; step < 3; ++step)
      for (auto& p : ranks) {
        models::Batch batch;
        ASSERT_TRUE(*p->Next(&batch));
        EXPECT_EQ(batch.inputs.size(), 3u);
        images.insert(
            std::vector<float>(batch.inputs[0].f32(), batch.inputs[0].f32() + 3 * 32 * 32));
      }
    EXPECT_EQ(images.size(), 6u) << "epoch " << epoch;
  }
}

TEST_F(DetectionSetTest, BrokenSetsAreNamed) {
  EXPECT_FALSE(oi::DetectionSet::Open(root_ / "missing").ok());
  absl::StatusOr<oi::DetectionSet> set = oi::DetectionSet::Open(root_ / "train");
  ASSERT_TRUE(set.ok());
  fs::remove(root_ / "train" / "data" / "000001.jpg");
  std::vector<float> pixels(3 * 32 * 32);
  oi::DetectionSample sample;
  const absl::Status s = set->Load(0, false, 32, pixels.data(), &sample);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("000001.jpg"), std::string::npos) << s;
}

}  // namespace
}  // namespace mlperf::benchmarks::retinanet
