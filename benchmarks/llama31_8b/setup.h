// Llama 3.1 8B configured for one invocation: the recipe (AdamW clipped at
// global norm 1.0, cosine decay with linear warm-up to a tenth of the peak
// rate over the rules' 1,200,000 steps), the decoder, the log-perplexity
// evaluation, and C4 in Megatron's token files (or the demonstration's
// generated language) read in GPTDataset's sample order.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "benchmarks/token_pipeline.h"
#include "datasets/megatron/generated.h"
#include "reference/models/decoder.h"

namespace mlperf::benchmarks::llama31_8b {

// The rules' schedule length: the cosine decays over this many steps.
inline constexpr int64_t kMaxSteps = 1'200'000;

struct Recipe {
  double base_lr = 0;  // the RCP reference's for the batch size
  double end_lr = 0;   // a tenth of it, as the reference decays
  int64_t warmup_steps = 0;
};

// The rules' hyperparameters, in the reference's log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe, const RunPlan& plan);

// Where the data lives: Megatron file prefixes (.bin/.idx) for training and
// validation, and for the demonstration the generated language's options.
struct TokenFiles {
  std::string train, validation;
  megatron::GeneratedLanguageOptions generated_train, generated_validation;
  // The demonstration evaluates this many distinct validation samples, each
  // standing for eval_samples / distinct copies (0: every sample, real data).
  int64_t distinct_eval = 0;
};

class Llama31Setup final : public BenchmarkSetup {
 public:
  Llama31Setup(RunPlan plan, Recipe recipe, models::DecoderConfig member, TokenFiles files);

  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, plan_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override;
  // Over several processes on the CPU: the distributed optimizer (AdamW's
  // state split over them, as the reference's distributed Adam).
  std::unique_ptr<optim::Optimizer> MakeOptimizerFor(const models::Model& model,
                                                     dist::Communicator& data_comm) const override;
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override;
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;

  const models::DecoderConfig& member() const { return member_; }
  const TokenFiles& files() const { return files_; }
  const Recipe& recipe() const { return recipe_; }

 private:
  TokenData Tokens(Split split) const;

  Recipe recipe_;
  models::DecoderConfig member_;
  TokenFiles files_;
};

}  // namespace mlperf::benchmarks::llama31_8b
