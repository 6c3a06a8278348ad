// BERT-Large configured for one invocation: the model started from the
// reference's TensorFlow checkpoint, LAMB under the reference's schedule, the
// pretraining TFRecords and the package README.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "benchmarks/bert/recipe.h"
#include "datasets/bert/generated.h"
#include "datasets/bert/loader.h"
#include "reference/models/bert.h"

namespace mlperf::benchmarks::bert {

class BertSetup final : public BenchmarkSetup {
 public:
  // checkpoint: the starting checkpoint's prefix (path without .index).
  BertSetup(RunPlan plan, Recipe recipe, models::BertConfig member, std::string checkpoint,
            datasets::bert::GeneratedBertOptions generated);

  const Recipe& recipe() const { return recipe_; }
  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, member_, plan_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  // The seed drew the dropout streams (and any tensor the checkpoint lacks,
  // none for the reference's); the weights come from the checkpoint.
  absl::Status LoadStartingCheckpoint(models::Model& model) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override {
    return bert::MakeOptimizer(recipe_, model);
  }
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override {
    return bert::MakeSchedule(recipe_);
  }
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  // Packed rows: the training samples packed (each read once for its
  // length and masked-LM slots), for the model's rows and the loaders.
  absl::Status PrepareProcess() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;

  // Gradient accumulation when a rank's batch does not fit its memory: the
  // model's arenas at the micro-batch, plus LAMB's two moments and the
  // accumulation sums (three parameter-sized arrays). GPUs are not fitted.
  absl::Status FitMicroBatch(int64_t memory_bytes);

 private:
  models::BertConfig ModelConfig(core::Device device) const;
  // The model's rows for a batch of `samples`: packed, as many rows as hold
  // that many samples on average (the training set's samples per packed
  // row, known once CheckData packed it; NVIDIA's data packs about two a
  // row: 48 rows for 96), else one a row.
  int64_t Rows(int64_t samples) const;
  std::string IndexDir() const;
  datasets::bert::PretrainingShape Shape() const;

  Recipe recipe_;
  models::BertConfig member_;
  std::string checkpoint_;
  datasets::bert::GeneratedBertOptions generated_;
  // Packed rows: the training samples' packing, made by CheckData (before
  // the clock) and read by every run's loader.
  mutable std::shared_ptr<const datasets::bert::Packs> packs_;
  mutable double samples_per_row_ = 1.0;
};

}  // namespace mlperf::benchmarks::bert
