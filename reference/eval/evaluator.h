// The evaluation seam: each rank accumulates what its share of the
// evaluation set gives, the ranks then reduce or gather it, and one value
// comes out, the same on every rank. A ratio of sums (top-1, mean DICE,
// masked-LM accuracy) reduces; a metric that needs every sample (AUC, COCO
// mAP, a median) gathers. Which way is better, and what counts as reaching
// the target, is the quality target's business (quality_targets/).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "reference/dist/communicator.h"
#include "reference/models/model.h"

namespace mlperf::eval {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Before a pass over the evaluation set: forgets the last pass.
  virtual void Start() = 0;
  // One local batch, its first batch.count samples real (the rest padding).
  virtual void Add(const models::Batch& batch) = 0;
  // Collective: every rank calls it once the pass is over and gets the value.
  // `comm` works on host buffers.
  virtual double Finish(dist::Communicator& comm) = 0;
};

// The ratio of the sums the model's EvaluateBatch returns, summed over the
// ranks in fp32 (counts up to 2^24 are exact: ImageNet's 50,000 images).
class RatioEvaluator final : public Evaluator {
 public:
  explicit RatioEvaluator(models::Model& model) : model_(model) {}
  void Start() override { sums_ = {}; }
  void Add(const models::Batch& batch) override;
  double Finish(dist::Communicator& comm) override;

 private:
  models::Model& model_;
  models::MetricSums sums_;
};

// Every rank's records (`record_size` floats per sample), gathered on every
// rank in rank order: what a metric that needs every sample computes from.
// Collective; the ranks may hold different numbers of records.
std::vector<float> GatherRecords(dist::Communicator& comm, std::span<const float> mine,
                                 int record_size);

}  // namespace mlperf::eval
