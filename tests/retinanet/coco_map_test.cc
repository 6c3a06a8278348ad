// COCO box mAP against pycocotools' COCOeval (tests/retinanet/coco_map_cases.py
// writes the cases as COCO JSON and the oracle's twelve stats): random sets,
// float32 values, tied scores, over 100 detections per image, crowds, empty
// images, classes without ground truth or outside the categories, a ground
// truth with id 0, area boundaries, no detections at all. Also the errors.
#include "reference/eval/coco_map.h"

#include <gtest/gtest.h>
#include <omp.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "datasets/coco/annotations.h"
#include "fmt/format.h"
#include "tests/core/parity_util.h"

namespace mlperf::eval {
namespace {

namespace coco = datasets::coco;
namespace fs = std::filesystem;

TEST(CocoBoxStats, MatchesPycocotools) {
  if (!testing::PythonHas("numpy, pycocotools"))
    GTEST_SKIP() << "pycocotools is missing for /usr/bin/python3";
  const fs::path dir = fs::temp_directory_path() / fmt::format("coco_map_cases_{}", ::getpid());
  const std::string cmd = fmt::format("/usr/bin/python3 {}/tests/retinanet/coco_map_cases.py {}",
                                      MLPERF_SOURCE_DIR, dir.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream expected(dir / "expected.txt");
  std::string line;
  int compared = 0;
  while (std::getline(expected, line)) {
    std::istringstream fields(line);
    std::string name;
    fields >> name;
    absl::StatusOr<coco::Dataset> truth = coco::ReadDataset(dir / (name + ".gt.json"));
    ASSERT_TRUE(truth.ok()) << truth.status();
    absl::StatusOr<std::vector<coco::Detection>> dets =
        coco::ReadDetections(dir / (name + ".dt.json"));
    ASSERT_TRUE(dets.ok()) << dets.status();
    absl::StatusOr<CocoStats> ours = CocoBoxStats(*truth, *dets);
    ASSERT_TRUE(ours.ok()) << ours.status();
    for (int i = 0; i < 12; ++i) {
      double want = 0;
      fields >> want;
      EXPECT_NEAR(ours->values[i], want, 1e-12) << name << " " << CocoStats::Names()[i];
    }
    ++compared;
  }
  EXPECT_EQ(compared, 13);
  // The same bits on one thread as on several (categories run in parallel).
  absl::StatusOr<coco::Dataset> truth = coco::ReadDataset(dir / "large.gt.json");
  absl::StatusOr<std::vector<coco::Detection>> dets = coco::ReadDetections(dir / "large.dt.json");
  ASSERT_TRUE(truth.ok() && dets.ok());
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const CocoStats one = *CocoBoxStats(*truth, *dets);
  omp_set_num_threads(std::max(threads, 3));
  const CocoStats many = *CocoBoxStats(*truth, *dets);
  omp_set_num_threads(threads);
  EXPECT_EQ(one.values, many.values);
  fs::remove_all(dir);
}

coco::Dataset OneImage() {
  coco::Dataset d;
  d.images = {{7, "a.jpg", 100, 100}};
  d.category_ids = {1, 2};
  d.category_names = {"a", "b"};
  coco::Annotation a;
  a.id = 1;
  a.image_id = 7;
  a.category_id = 1;
  a.bbox[0] = 10, a.bbox[1] = 10, a.bbox[2] = 40, a.bbox[3] = 40;
  a.area = 1600;
  d.annotations = {a};
  a.id = 2;
  a.category_id = 2;
  a.bbox[0] = 60, a.bbox[2] = 20, a.bbox[3] = 20;
  a.area = 400;
  d.annotations.push_back(a);
  return d;
}

TEST(CocoBoxStats, ExactDetectionsScoreOne) {
  const coco::Dataset truth = OneImage();
  std::vector<coco::Detection> dets;
  for (const coco::Annotation& a : truth.annotations)
    dets.push_back({a.image_id, a.category_id, {a.bbox[0], a.bbox[1], a.bbox[2], a.bbox[3]}, 0.9});
  const CocoStats s = *CocoBoxStats(truth, dets);
  // Precision is tp / (tp + fp + eps), as COCOeval divides: just below 1.
  EXPECT_NEAR(s.map(), 1.0, 1e-15);
  EXPECT_NEAR(s.values[3], 1.0, 1e-15);  // small: the 20 x 20 box
  EXPECT_NEAR(s.values[4], 1.0, 1e-15);  // medium: the 40 x 40 box
  EXPECT_EQ(s.values[5], -1.0);          // large: no ground truth
}

TEST(CocoBoxStats, RefusesDetectionsOfUnknownImagesAndRepeatedIds) {
  coco::Dataset truth = OneImage();
  std::vector<coco::Detection> dets = {{8, 1, {0, 0, 5, 5}, 0.5}};
  absl::StatusOr<CocoStats> s = CocoBoxStats(truth, dets);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "results[0]: image_id 8 is not an image of the ground truth");
  truth.annotations[1].id = 1;
  s = CocoBoxStats(truth, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "annotations[1]: id 1 is used by annotations[0] too");
}

TEST(CocoAnnotations, NamesWhatIsMissingOrMalformed) {
  auto error = [](std::string_view text) {
    return std::string(coco::ParseDataset(text).status().message());
  };
  EXPECT_EQ(error(R"({"images": [], "categories": []})"),
            "annotations file: no \"annotations\" list");
  EXPECT_EQ(error(R"({"images": [{"id": 1}], "categories": [{"id": 1}], "annotations": [
               {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}]})"),
            "annotations[0]: no area");
  EXPECT_EQ(error(R"({"images": [{"id": 1}], "categories": [{"id": 1}], "annotations": [
               {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 1], "area": 1}]})"),
            "annotations[0]: bbox is not 4 numbers");
  EXPECT_EQ(error(R"({"images": [{"id": "x"}], "categories": [], "annotations": []})"),
            "images[0]: id is not an integer");
  EXPECT_FALSE(coco::ParseDataset("{").ok());
  const auto dets =
      coco::ParseDetections(R"([{"image_id": 1, "category_id": 2, "bbox": [1, 2, 3, 4]}])");
  ASSERT_FALSE(dets.ok());
  EXPECT_EQ(dets.status().message(), "results[0]: no score");
  const auto read = coco::ReadDataset("/nonexistent/annotations.json");
  EXPECT_FALSE(read.ok());
}

}  // namespace
}  // namespace mlperf::eval
