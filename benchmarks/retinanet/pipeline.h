// RetinaNet's batches from a DetectionSet: training images in a fresh
// permutation each epoch (the remainder of an epoch dropped, as the
// reference's drop_last; each rank its share of every global batch), each
// flipped horizontally with probability 0.5; evaluation images in id order,
// split between the ranks exactly once. Inputs: images [batch, 3, size,
// size], boxes [batch, max_boxes, 4], labels [batch, max_boxes] (-1 pads),
// and for evaluation info [batch, 3] int32 (image id, height, width).
// A batch's images decode on the loader's threads.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "benchmarks/benchmark.h"
#include "datasets/openimages/detection_set.h"

namespace mlperf::benchmarks::retinanet {

struct PipelineShape {
  int64_t image_size = 800;
  int64_t max_boxes = 100;
};

std::unique_ptr<DataPipeline> MakeDetectionPipeline(
    std::shared_ptr<const datasets::openimages::DetectionSet> set, bool eval, uint64_t seed,
    int rank, const RunPlan& plan, const PipelineShape& shape);

}  // namespace mlperf::benchmarks::retinanet
