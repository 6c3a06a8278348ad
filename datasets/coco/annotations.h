// Box annotations in the COCO JSON format: the ground truth a detection data
// set ships ({"images", "categories", "annotations"}, as the MLPerf
// OpenImages subset's download scripts leave it) and a detector's results
// (a list of {"image_id", "category_id", "bbox", "score"}, what pycocotools'
// loadRes reads). Boxes are [x, y, width, height] in pixels.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::datasets::coco {

struct Image {
  int64_t id = 0;
  std::string file_name;
  int64_t width = 0;
  int64_t height = 0;
};

struct Annotation {
  int64_t id = 0;
  int64_t image_id = 0;
  int64_t category_id = 0;
  double bbox[4] = {0, 0, 0, 0};  // x, y, width, height
  double area = 0;                // the file's own, not recomputed (COCOeval reads it)
  bool iscrowd = false;
};

struct Dataset {
  std::vector<Image> images;                // in file order
  std::vector<int64_t> category_ids;        // in file order
  std::vector<std::string> category_names;  // parallel to category_ids
  std::vector<Annotation> annotations;      // in file order
};

struct Detection {
  int64_t image_id = 0;
  int64_t category_id = 0;
  double bbox[4] = {0, 0, 0, 0};  // x, y, width, height
  double score = 0;
};

// The ground truth from JSON text or a file. Every annotation needs an id,
// image_id, category_id, a four-number bbox and an area; iscrowd is 0 where
// absent. Errors name the entry ("annotations[12]: no area").
absl::StatusOr<Dataset> ParseDataset(std::string_view json_text);
absl::StatusOr<Dataset> ReadDataset(const std::filesystem::path& path);

// Detections from a results list, in file order.
absl::StatusOr<std::vector<Detection>> ParseDetections(std::string_view json_text);
absl::StatusOr<std::vector<Detection>> ReadDetections(const std::filesystem::path& path);

}  // namespace mlperf::datasets::coco
