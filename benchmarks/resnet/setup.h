// ResNet-50 v1.5 configured for one invocation: the model, its recipe's
// optimizer and schedule, the ImageNet pipeline and the package README.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "benchmarks/resnet/recipe.h"
#include "datasets/dataset_index.h"
#include "datasets/synthetic_image_set.h"
#include "reference/models/resnet.h"

namespace mlperf::benchmarks::resnet {

class ResnetSetup final : public BenchmarkSetup {
 public:
  ResnetSetup(RunPlan plan, Recipe recipe, ModelShape shape,
              datasets::SyntheticImageSetOptions generated, bool gpu_decode);

  const Recipe& recipe() const { return recipe_; }
  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, plan_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override {
    return resnet::MakeOptimizer(recipe_, model);
  }
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override {
    return resnet::MakeSchedule(recipe_, plan_.schedule.steps_per_epoch);
  }
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;

  // Accumulates gradients over micro-batches when a rank's batch does not fit
  // `memory_bytes`: the model's arenas, the momentum and accumulation sums
  // (bounded by two batch-1 models) and the loader's batches in flight.
  absl::Status FitToMemory(int64_t memory_bytes);

 private:
  models::ResNetConfig ModelConfig(core::Device device) const;
  std::string IndexFile(datasets::Split split) const;
  // From the index file when it is current (the demo's generated set reads
  // every label once to count the classes).
  absl::StatusOr<datasets::DatasetIndex> Index(datasets::Split split) const;

  Recipe recipe_;
  ModelShape shape_;
  datasets::SyntheticImageSetOptions generated_;
  bool gpu_decode_;
};

}  // namespace mlperf::benchmarks::resnet
