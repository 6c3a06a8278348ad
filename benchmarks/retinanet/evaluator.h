// RetinaNet's evaluation as the reference computes it: each rank's
// detections (post-processed, scaled back to the original image, as
// [x, y, width, height] with the class as category id), gathered from
// every rank, then COCO box mAP@[.5:.95] over the validation annotations
// (reference/eval/coco_map.h, pycocotools' numbers).
#pragma once

#include <memory>
#include <vector>

#include "datasets/coco/annotations.h"
#include "reference/eval/evaluator.h"
#include "reference/models/retinanet.h"

namespace mlperf::benchmarks::retinanet {

class CocoMapEvaluator final : public eval::Evaluator {
 public:
  CocoMapEvaluator(models::RetinaNet& model, std::shared_ptr<const datasets::coco::Dataset> truth)
      : model_(model), truth_(std::move(truth)) {}
  void Start() override { records_.clear(); }
  // The batch's fourth input: per image its id, height and width.
  void Add(const models::Batch& batch) override;
  double Finish(dist::Communicator& comm) override;

 private:
  models::RetinaNet& model_;
  std::shared_ptr<const datasets::coco::Dataset> truth_;
  std::vector<float> records_;  // kRecord floats per detection
};

}  // namespace mlperf::benchmarks::retinanet
