// GPT-3 configured for one invocation: the recipe (Adam with decoupled
// weight decay 0.1, gradients clipped at global norm 1.0, the cosine
// schedule resumed at the starting checkpoint's step), the decoder, the
// log-perplexity evaluation, the starting checkpoint in Megatron's Zarr
// form, and the demonstration's generated language in Megatron's token
// files (with its starting checkpoint pre-trained here, untimed).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "benchmarks/token_pipeline.h"
#include "datasets/megatron/generated.h"
#include "reference/models/decoder.h"

namespace mlperf::benchmarks::gpt3 {

struct Recipe {
  double base_lr = 0;  // 2e-5 or 3e-5, as the rules allow
  double end_lr = 0;   // a tenth of it
  int64_t warmup_steps = 0, decay_steps = 0;
  int64_t checkpoint_step = 0;  // the steps the starting checkpoint took
};

// The rules' hyperparameters, in the reference's log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe, const RunPlan& plan);

// The demonstration's data and starting checkpoint.
struct Demo {
  megatron::GeneratedLanguageOptions train, validation;
  int64_t eval_count = 0;      // validation samples evaluated
  int64_t pretrain_steps = 0;  // the checkpoint's steps
  int64_t pretrain_batch = 0;  // and its batch
  double pretrain_lr = 0;      // its own rate (the rules bind the timed runs only)
  uint64_t pretrain_seed = 0;  // the weights' and the samples' seed
};

class Gpt3Setup final : public BenchmarkSetup {
 public:
  Gpt3Setup(RunPlan plan, Recipe recipe, models::DecoderConfig member, Demo demo);

  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, plan_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  absl::Status LoadStartingCheckpoint(models::Model& model) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override;
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override;
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;

  const models::DecoderConfig& member() const { return member_; }
  const Recipe& recipe() const { return recipe_; }
  std::string CheckpointDir() const;

 private:
  TokenData Tokens(Split split) const;
  // The demonstration's starting checkpoint: the member pre-trained
  // demo_.pretrain_steps steps from demo_.pretrain_seed.
  absl::Status Pretrain(const std::string& dir) const;

  Recipe recipe_;
  models::DecoderConfig member_;
  Demo demo_;
};

}  // namespace mlperf::benchmarks::gpt3
