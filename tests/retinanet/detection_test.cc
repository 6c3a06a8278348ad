// The box machinery against torchvision on the same inputs
// (tests/retinanet/detection_oracle.py): IoU, the box coder, the
// reference's anchors, the matcher, NMS (plain and per class on both of
// batched_nms' paths) and the post-processing of one image's head outputs.
#include "reference/kernels/ops/detection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/core/tensor.h"
#include "reference/detection/anchors.h"
#include "reference/detection/boxes.h"
#include "reference/detection/matcher.h"
#include "reference/detection/nms.h"
#include "reference/detection/postprocess.h"
#include "reference/io/safetensors.h"
#include "tests/core/parity_util.h"

namespace mlperf::detection {
namespace {

class DetectionParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!testing::PythonHas("torch, torchvision")) return;
    path_ = new std::string(testing::TempPath("detection_oracle"));
    const std::string cmd = fmt::format(
        "/usr/bin/python3 {}/tests/retinanet/detection_oracle.py {}", MLPERF_SOURCE_DIR, *path_);
    if (std::system(cmd.c_str()) != 0) return;
    auto file = io::SafetensorsFile::Read(*path_);
    if (file.ok()) file_ = new io::SafetensorsFile(std::move(*file));
  }
  static void TearDownTestSuite() {
    if (path_ != nullptr) std::filesystem::remove(*path_);
    delete file_;
    delete path_;
  }
  void SetUp() override {
    if (file_ == nullptr)
      GTEST_SKIP() << "torchvision is missing for /usr/bin/python3 (or its oracle failed)";
  }
  static std::vector<float> Floats(const std::string& name) { return testing::Load(*file_, name); }
  static std::vector<Box> Boxes(const std::string& name) {
    const std::vector<float> f = Floats(name);
    std::vector<Box> out(f.size() / 4);
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = {f[4 * i], f[4 * i + 1], f[4 * i + 2], f[4 * i + 3]};
    return out;
  }
  static std::vector<int64_t> Ints(const std::string& name) {
    const std::vector<float> f = Floats(name);
    return std::vector<int64_t>(f.begin(), f.end());
  }
  static void ExpectBoxesNear(const std::vector<Box>& ours, const std::vector<Box>& want, float tol,
                              const std::string& what) {
    ASSERT_EQ(ours.size(), want.size()) << what;
    for (size_t i = 0; i < ours.size(); ++i) {
      const float* a = &ours[i].x1;
      const float* b = &want[i].x1;
      for (int c = 0; c < 4; ++c)
        ASSERT_NEAR(a[c], b[c], tol * std::max(1.0f, std::fabs(b[c]))) << what << " box " << i;
    }
  }
  static std::string* path_;
  static io::SafetensorsFile* file_;
};
std::string* DetectionParity::path_ = nullptr;
io::SafetensorsFile* DetectionParity::file_ = nullptr;

TEST_F(DetectionParity, IouMatchesBoxIou) {
  const std::vector<Box> a = Boxes("iou/a"), b = Boxes("iou/b");
  std::vector<float> iou(a.size() * b.size());
  BoxIou(a, b, iou.data());
  const std::vector<float> want = Floats("iou/out");
  for (size_t i = 0; i < iou.size(); ++i) ASSERT_FLOAT_EQ(iou[i], want[i]) << i;
  EXPECT_EQ(iou[3 * b.size() + 7], 1.0f);
}

TEST_F(DetectionParity, CoderMatchesBoxCoder) {
  const std::vector<Box> truth = Boxes("coder/truth"), anchors = Boxes("coder/anchors");
  const std::vector<float> codes = Floats("coder/codes"), encoded = Floats("coder/encoded");
  const BoxCoder coder;
  std::vector<Box> decoded;
  for (size_t i = 0; i < truth.size(); ++i) {
    const std::array<float, 4> e = coder.Encode(truth[i], anchors[i]);
    for (int c = 0; c < 4; ++c) ASSERT_NEAR(e[c], encoded[4 * i + c], 1e-5f) << i;
    decoded.push_back(coder.Decode(&codes[4 * i], anchors[i]));
  }
  ExpectBoxesNear(decoded, Boxes("coder/decoded"), 1e-6f, "decoded");
}

TEST_F(DetectionParity, AnchorsMatchAnchorGenerator) {
  const std::vector<FeatureSize> big = {{100, 100}, {50, 50}, {25, 25}, {13, 13}, {7, 7}};
  const std::vector<FeatureSize> small = {{12, 16}, {6, 8}, {3, 4}, {2, 2}, {1, 1}};
  const auto sizes = RetinaNetAnchorSizes();
  EXPECT_EQ(sizes[4], (std::vector<int>{512, 645, 812}));
  ExpectBoxesNear(ImageAnchors(sizes, 800, 800, big), Boxes("anchors/800"), 0, "800 x 800");
  ExpectBoxesNear(ImageAnchors(sizes, 96, 128, small), Boxes("anchors/small"), 0, "96 x 128");
}

TEST_F(DetectionParity, MatchesLikeTheMatcher) {
  const std::vector<FeatureSize> small = {{12, 16}, {6, 8}, {3, 4}, {2, 2}, {1, 1}};
  const std::vector<Box> anchors = ImageAnchors(RetinaNetAnchorSizes(), 96, 128, small);
  const std::vector<Box> truths = Boxes("match/truths");
  std::vector<float> iou(truths.size() * anchors.size());
  BoxIou(truths, anchors, iou.data());
  const std::vector<int64_t> ours = MatchAnchors(iou.data(), static_cast<int64_t>(truths.size()),
                                                 static_cast<int64_t>(anchors.size()));
  EXPECT_EQ(ours, Ints("match/out"));
  // The truth that overlaps nothing makes every anchor of IoU 0 with it
  // (and its best elsewhere 0 too) take that best back: truth 0.
  int64_t foreground = 0;
  for (int64_t m : ours) foreground += m >= 0;
  EXPECT_GT(foreground, static_cast<int64_t>(anchors.size()) / 2);
  // Without it: background, ignored and matched anchors.
  const std::vector<int64_t> inside = MatchAnchors(
      iou.data(), static_cast<int64_t>(truths.size()) - 1, static_cast<int64_t>(anchors.size()));
  EXPECT_EQ(inside, Ints("match/out_inside"));
  for (int64_t kind : {kBackground, kIgnored, int64_t{0}})
    EXPECT_NE(std::find(inside.begin(), inside.end(), kind), inside.end()) << kind;
}

TEST_F(DetectionParity, NmsKeepsWhatTorchvisionKeeps) {
  EXPECT_EQ(Nms(Boxes("nms/boxes"), Floats("nms/scores"), 0.5), Ints("nms/keep"));
  for (const std::string name : {"batched_trick", "batched_vanilla"}) {
    const std::vector<int64_t> classes = Ints(name + "/classes");
    EXPECT_EQ(BatchedNms(Boxes(name + "/boxes"), Floats(name + "/scores"), classes, 0.5),
              Ints(name + "/keep"))
        << name;
  }
}

TEST_F(DetectionParity, PostprocessMatchesPostprocessDetections) {
  const std::vector<FeatureSize> small = {{12, 16}, {6, 8}, {3, 4}, {2, 2}, {1, 1}};
  const std::vector<Box> anchors = ImageAnchors(RetinaNetAnchorSizes(), 96, 128, small);
  const std::vector<float> logits = Floats("post/logits"), regression = Floats("post/regression");
  const int64_t classes = 7;
  std::vector<LevelOutputs> levels;
  int64_t first = 0;
  for (const FeatureSize& f : small) {
    const int64_t n = f.height * f.width * kAnchorsPerCell;
    levels.push_back({logits.data() + first * classes, regression.data() + first * 4,
                      std::span<const Box>(anchors).subspan(first, n)});
    first += n;
  }
  const Detections ours = Postprocess(levels, classes, 96, 128);
  EXPECT_EQ(ours.labels, Ints("post/labels"));
  const std::vector<float> scores = Floats("post/scores");
  ASSERT_EQ(ours.scores.size(), scores.size());
  for (size_t i = 0; i < scores.size(); ++i) ASSERT_NEAR(ours.scores[i], scores[i], 1e-6f) << i;
  ExpectBoxesNear(ours.boxes, Boxes("post/boxes"), 1e-6f, "detections");
}

TEST(Nms, SuppressesOnlyAboveTheThresholdAndWithinAClass) {
  // Boxes 0 and 1 overlap by exactly 0.5 and both stay (strictly greater
  // suppresses); box 2 overlaps box 0 by 0.9, but not in its class.
  const std::vector<Box> boxes = {{0, 0, 10, 10}, {0, 0, 10, 5}, {0, 0, 10, 9}};
  const std::vector<float> scores = {0.9f, 0.8f, 0.7f};
  EXPECT_EQ(Nms(boxes, scores, 0.5), (std::vector<int64_t>{0, 1}));
  const std::vector<int64_t> classes = {0, 0, 1};
  EXPECT_EQ(BatchedNms(boxes, scores, classes, 0.5), (std::vector<int64_t>{0, 1, 2}));
}

// NMS through the suppression matrix (ops::NmsMask's CPU kernel, the twin
// of the GPU's, walked on the host) keeps Nms's indices: clustered boxes
// with tied scores at three thresholds, and per class on both of
// batched_nms' paths.
std::vector<int64_t> MatrixNms(std::span<const Box> boxes, std::span<const float> scores,
                               double threshold) {
  const std::vector<int64_t> order = ScoreOrder(scores);
  const auto n = static_cast<int64_t>(boxes.size()), words = (n + 63) / 64;
  std::vector<float> sorted;
  for (int64_t i : order)
    sorted.insert(sorted.end(), {boxes[i].x1, boxes[i].y1, boxes[i].x2, boxes[i].y2});
  std::vector<uint64_t> mask(static_cast<size_t>(n * words), ~uint64_t{0});
  ops::NmsMask(core::Tensor(sorted.data(), core::Shape{n, 4}, core::DType::kF32), threshold,
               core::Tensor(mask.data(), core::Shape{n, words}, core::DType::kI64));
  return WalkSuppression(order, mask);
}

TEST(Nms, ASuppressionMatrixWalkedGivesTheSameIndices) {
  for (const int64_t n : {1, 64, 130, 1500}) {
    std::vector<Box> boxes;
    std::vector<float> scores;
    std::vector<int64_t> classes;
    for (int64_t i = 0; i < n; ++i) {
      // Clusters of boxes around a few centres; scores with ties.
      const float u = core::PhiloxUniform(5, 0, 4 * i), v = core::PhiloxUniform(5, 0, 4 * i + 1);
      const float cx = 40.0f * static_cast<float>(i % 7) + 8.0f * u,
                  cy = 30.0f * static_cast<float>(i % 5) + 8.0f * v;
      const float w = 10.0f + 20.0f * core::PhiloxUniform(5, 0, 4 * i + 2);
      boxes.push_back({cx, cy, cx + w, cy + 0.8f * w});
      scores.push_back(std::round(100.0f * core::PhiloxUniform(5, 0, 4 * i + 3)) / 100.0f);
      classes.push_back(i % 3);
    }
    for (const double threshold : {0.3, 0.5, 0.7}) {
      EXPECT_EQ(MatrixNms(boxes, scores, threshold), Nms(boxes, scores, threshold))
          << n << " boxes at " << threshold;
      EXPECT_EQ(BatchedNms(boxes, scores, classes, threshold, MatrixNms),
                BatchedNms(boxes, scores, classes, threshold))
          << n << " boxes at " << threshold;
    }
  }
}

}  // namespace
}  // namespace mlperf::detection
