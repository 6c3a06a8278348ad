#include "benchmarks/retinanet/evaluator.h"

#include <cstdio>
#include <string>

#include "base/check.h"
#include "reference/eval/coco_map.h"

namespace mlperf::benchmarks::retinanet {
namespace {

// image id, category, x, y, width, height, score: exact in floats (ids
// below 2^24, as the subset's are).
constexpr int kRecord = 7;

}  // namespace

void CocoMapEvaluator::Add(const models::Batch& batch) {
  MLPERF_CHECK_MSG(batch.inputs.size() == 4,
                   "an evaluation batch carries the images' ids and sizes");
  const int32_t* info = batch.inputs[3].as<int32_t>();
  const int64_t size = model_.config().backbone.image_size;
  const std::vector<detection::Detections> dets = model_.Detect(batch);
  for (size_t i = 0; i < dets.size(); ++i) {
    const int32_t id = info[3 * i], height = info[3 * i + 1], width = info[3 * i + 2];
    for (size_t k = 0; k < dets[i].scores.size(); ++k) {
      const detection::Box b = detection::ScaleBox(dets[i].boxes[k], size, size, height, width);
      // convert_to_xywh: the sizes differenced in fp32.
      records_.insert(records_.end(),
                      {static_cast<float>(id), static_cast<float>(dets[i].labels[k]), b.x1, b.y1,
                       b.x2 - b.x1, b.y2 - b.y1, dets[i].scores[k]});
    }
  }
}

double CocoMapEvaluator::Finish(dist::Communicator& comm) {
  const std::vector<float> all = eval::GatherRecords(comm, records_, kRecord);
  std::vector<datasets::coco::Detection> dets(all.size() / kRecord);
  for (size_t i = 0; i < dets.size(); ++i) {
    const float* r = all.data() + i * kRecord;
    dets[i] = {
        static_cast<int64_t>(r[0]), static_cast<int64_t>(r[1]), {r[2], r[3], r[4], r[5]}, r[6]};
  }
  absl::StatusOr<eval::CocoStats> stats = eval::CocoBoxStats(*truth_, dets);
  if (!stats.ok()) {
    // Detections of images outside the annotations cannot come from the
    // pipeline; a broken set is refused before the runs.
    std::fprintf(stderr, "retinanet: mAP: %s\n", std::string(stats.status().message()).c_str());
    return 0.0;
  }
  return stats->map();
}

}  // namespace mlperf::benchmarks::retinanet
