// RetinaNet configured for one invocation: the recipe (torch's Adam, no
// weight decay, a linear warm-up from warmup_factor x the base rate over
// the first warmup_epochs, then the base rate), the model (RetinaNet over a
// ResNeXt-FPN, trainable_backbone_layers 3), the OpenImages subset in its
// download layout (or the demonstration's generated shapes), and COCO
// mAP over the validation set after every epoch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "datasets/openimages/detection_set.h"
#include "datasets/openimages/generated.h"
#include "reference/models/retinanet.h"

namespace mlperf::benchmarks::retinanet {

struct Recipe {
  double base_lr = 1e-4;
  int warmup_epochs = 1;
  double warmup_factor = 1e-3;
};

// The demonstration's data and the backbone it starts from: pre-trained
// (untimed, once) as the whole detector on the pretext shapes, every layer
// training; the runs then take its body, as the reference's take
// ImageNet's.
struct Demo {
  datasets::openimages::GeneratedShapesOptions shapes, pretext;
  int64_t pretrain_steps = 0;
  int64_t pretrain_batch = 0;
  double pretrain_lr = 0;
  uint64_t pretrain_seed = 0;
};

// The rules' hyperparameters, in the reference's log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe, const RunPlan& plan);

class RetinaNetSetup final : public BenchmarkSetup {
 public:
  // `data`: the subset's root (train/, validation/), or where the
  // demonstration's set is generated; `backbone`: the body's checkpoint.
  RetinaNetSetup(RunPlan plan, Recipe recipe, models::RetinaNetConfig member, std::string data,
                 std::string backbone, Demo demo);

  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, plan_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  // The pre-trained body (the FPN and heads keep their seeded start).
  absl::Status LoadStartingCheckpoint(models::Model& model) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override;
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override;
  std::unique_ptr<eval::Evaluator> MakeEvaluator(models::Model& model) const override;
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;

  const models::RetinaNetConfig& member() const { return member_; }
  const Recipe& recipe() const { return recipe_; }
  const std::string& backbone() const { return backbone_; }

 private:
  // The split, read once per invocation and shared by its runs.
  absl::StatusOr<std::shared_ptr<const datasets::openimages::DetectionSet>> OpenSplit(
      const std::string& name) const;

  // The demonstration's backbone, pre-trained on the pretext set into `path`.
  absl::Status Pretrain(const std::string& path) const;

  Recipe recipe_;
  models::RetinaNetConfig member_;
  std::string data_, backbone_;
  Demo demo_;
  mutable std::shared_ptr<const datasets::openimages::DetectionSet> train_, validation_;
};

}  // namespace mlperf::benchmarks::retinanet
