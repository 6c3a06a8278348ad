// Llama 2 70B LoRA configured for one invocation: the recipe (AdamW with
// decoupled weight decay 1e-4, gradients clipped at global norm 0.3, a
// cosine from the base rate to 0 over the training steps, no warm-up), the
// decoder with rank-16 adapters on its fused qkv_proj and o_proj over a
// frozen bf16 base read from Hugging Face shards, the loss and evaluation
// as transformers' Trainer computes them with one sample per device (each
// sample's mean over its summary tokens, averaged over samples), and
// GovReport in the converted arrays (or the demonstration's generated task,
// with a base checkpoint pre-trained here, untimed).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "benchmarks/llama2_70b_lora/pipeline.h"
#include "datasets/govreport/generated.h"
#include "reference/models/decoder.h"

namespace mlperf::benchmarks::llama2_70b_lora {

struct Recipe {
  double base_lr = 0;          // the RCP reference's
  int64_t training_steps = 0;  // the cosine's length and the run's cap (the reference's max_steps)
  double weight_decay = 1e-4;
  double clip_norm = 0.3;
};

// The rules' hyperparameters, in the reference's log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe, const RunPlan& plan,
                                              const models::DecoderConfig& member);

// The demonstration's data and base checkpoint.
struct Demo {
  govreport::GeneratedTaskOptions task;
  int64_t pretrain_steps = 0;  // the base's steps on the training reports
  int64_t pretrain_batch = 0;
  double pretrain_lr = 0;  // its own rate (the rules bind the timed runs only)
  uint64_t pretrain_seed = 0;
};

class LoraSetup final : public BenchmarkSetup {
 public:
  // `data`: the converted arrays' folder; `base`: the base checkpoint;
  // `adapters`: where each run's adapters go ("": nowhere).
  LoraSetup(RunPlan plan, Recipe recipe, models::DecoderConfig member, std::string data,
            std::string base, Demo demo, std::string adapters = "");

  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, plan_, member_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  absl::Status LoadStartingCheckpoint(models::Model& model) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override;
  // Over several processes on the CPU, or a tensor-parallel model: the
  // distributed optimizer (its clip sums the norm over the tensor ranks).
  std::unique_ptr<optim::Optimizer> MakeOptimizerFor(const models::Model& model,
                                                     dist::Communicator& data_comm) const override;
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override;
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;
  // With --save_adapters: data rank 0's tensor group writes run `run`'s
  // adapters as peft saves them.
  absl::Status AfterRun(const models::Model& model, int run, int data_rank) const override;
  std::string AdapterDir(int run) const;

  const models::DecoderConfig& member() const { return member_; }
  const Recipe& recipe() const { return recipe_; }
  const std::string& base() const { return base_; }

 private:
  SplitFiles Files(const std::string& split) const {
    return {
        .dir = data_, .split = split, .seq_len = member_.seq_len, .vocab_size = member_.vocab_size};
  }
  // The demonstration's base: the member without adapters, trained on the
  // training reports, written as Hugging Face shards in bf16.
  absl::Status Pretrain(const std::string& dir) const;

  Recipe recipe_;
  models::DecoderConfig member_;
  std::string data_, base_;
  Demo demo_;
  std::string adapters_;
};

}  // namespace mlperf::benchmarks::llama2_70b_lora
