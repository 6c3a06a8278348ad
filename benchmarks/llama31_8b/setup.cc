#include "benchmarks/llama31_8b/setup.h"

#include <filesystem>
#include <utility>

#include "base/files.h"
#include "benchmarks/decoder_benchmark.h"
#include "benchmarks/readme.h"
#include "fmt/format.h"
#include "logging/mllog_keys.h"
#include "reference/dist/communicator.h"
#include "reference/optim/adam.h"

namespace mlperf::benchmarks::llama31_8b {

namespace fs = std::filesystem;
namespace key = mllog::key;

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const RunPlan& plan) {
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  add(key::kMaxSequenceLength, int64_t{8192});
  add(key::kEvalSamples, plan.eval_samples);
  add(key::kOptName, "adamw");
  add(key::kOptBaseLearningRate, r.base_lr);
  add(key::kOptAdamwBeta1, 0.9);
  add(key::kOptAdamwBeta2, 0.95);
  add(key::kOptAdamwEpsilon, 1e-05);
  add(key::kOptAdamwWeightDecay, 0.1);
  add(key::kOptGradientClipNorm, 1.0);
  add(key::kOptEndLearningRate, r.end_lr);
  add(key::kOptLearningRateWarmupSteps, r.warmup_steps);
  add(key::kOptLearningRateDecaySteps, kMaxSteps - r.warmup_steps);
  add(key::kOptLearningRateDecaySchedule, "cosine with linear warmup");
  add(key::kMaxSteps, kMaxSteps);
  return h;
}

Llama31Setup::Llama31Setup(RunPlan plan, Recipe recipe, models::DecoderConfig member,
                           TokenFiles files)
    : recipe_(recipe), member_(std::move(member)), files_(std::move(files)) {
  plan_ = std::move(plan);
}

std::unique_ptr<models::Model> Llama31Setup::MakeModel(const models::Placement& placement,
                                                       uint64_t seed) const {
  models::DecoderConfig c = member_;
  c.device = placement.device;
  // Split over the tensor-parallel group (a group of one: the whole model);
  // the trainer averages the gradients over the data-parallel ranks.
  return std::make_unique<models::Decoder>(c, plan_.batch_per_rank,
                                           models::Placement{.device = placement.device,
                                                             .rank = placement.tensor_rank,
                                                             .world_size = placement.tensor_size,
                                                             .comm = placement.tensor_comm},
                                           seed);
}

std::unique_ptr<optim::Optimizer> Llama31Setup::MakeOptimizer(const models::Model& model) const {
  // The rules' AdamW; norm scales take no weight decay (Megatron's default).
  return std::make_unique<optim::Adam>(optim::AdamOptions{.beta1 = 0.9f,
                                                          .beta2 = 0.95f,
                                                          .epsilon = 1e-5f,
                                                          .weight_decay = 0.1f,
                                                          .decoupled = true,
                                                          .max_grad_norm = 1.0f},
                                       model.slices());
}

std::unique_ptr<optim::Optimizer> Llama31Setup::MakeOptimizerFor(
    const models::Model& model, dist::Communicator& data_comm) const {
  std::unique_ptr<optim::Optimizer> distributed = DistributedDecoderOptimizer(
      model, data_comm, plan_.options.gpus > 0, 1.0f, [](std::vector<TensorSlice> shard) {
        return std::make_unique<optim::Adam>(optim::AdamOptions{.beta1 = 0.9f,
                                                                .beta2 = 0.95f,
                                                                .epsilon = 1e-5f,
                                                                .weight_decay = 0.1f,
                                                                .decoupled = true},
                                             std::move(shard));
      });
  return distributed != nullptr ? std::move(distributed) : MakeOptimizer(model);
}

std::unique_ptr<optim::LearningRateSchedule> Llama31Setup::MakeSchedule() const {
  return std::make_unique<optim::CosineWithWarmup>(
      optim::CosineWithWarmupParams{.max_lr = recipe_.base_lr,
                                    .min_lr = recipe_.end_lr,
                                    .warmup_steps = recipe_.warmup_steps,
                                    .decay_steps = kMaxSteps});
}

absl::Status Llama31Setup::PrepareData() const {
  if (!plan_.demo) return absl::OkStatus();
  const fs::path done = fs::path(plan_.data_root) / ".generated";
  std::error_code ec;
  if (fs::exists(done, ec)) return absl::OkStatus();
  if (absl::Status s = WriteGeneratedTokenFiles(Tokens(Split::kTrain), files_.generated_train,
                                                Tokens(Split::kEval), files_.generated_validation);
      !s.ok())
    return s;
  return base::WriteFileAtomically(done, files_.generated_train.Name());
}

TokenData Llama31Setup::Tokens(Split split) const {
  const bool eval = split == Split::kEval;
  return {.prefix = eval ? files_.validation : files_.train,
          .sequence_length = member_.seq_len,
          .vocab_size = member_.vocab_size,
          .eval_count = files_.distinct_eval > 0 ? files_.distinct_eval : plan_.eval_samples};
}

absl::Status Llama31Setup::CheckData() const {
  return CheckTokenFiles(Tokens(Split::kTrain), Tokens(Split::kEval));
}

absl::StatusOr<std::unique_ptr<DataPipeline>> Llama31Setup::OpenData(Split split, uint64_t seed,
                                                                     int rank) const {
  return OpenTokenPipeline(Tokens(split), split, seed, rank, plan_);
}

std::string Llama31Setup::ReadmeSection() const {
  const RunPlan& plan = plan_;
  const models::DecoderConfig& m = member_;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "llama31_8b",
       .title = "Llama 3.1 8B",
       .data_name = "C4",
       .member = fmt::format(
           "a small member of the Llama family ({} layers, hidden {}, {} query and {} key/value "
           "heads, SwiGLU {}, vocabulary {}, samples of {} tokens with attention within chunks "
           "of {})",
           m.layers, m.hidden, m.heads, m.kv_heads, m.intermediate, m.vocab_size, m.seq_len,
           m.attention_chunk),
       .generated = fmt::format(
           "a generated first-order Markov language in Megatron's token files ({} training and "
           "{} validation documents of {} to {} tokens); the evaluation set is {} distinct "
           "validation samples tiled to the rules' {} (each stands for {} copies, so the log "
           "perplexity is the tiled set's exactly)",
           files_.generated_train.documents, files_.generated_validation.documents,
           files_.generated_train.min_length, files_.generated_train.max_length,
           files_.distinct_eval, plan.eval_samples,
           files_.distinct_eval > 0 ? plan.eval_samples / files_.distinct_eval : 1),
       .rules_detail =
           fmt::format("samples_count metadata, target log perplexity {}", plan.target.Describe()),
       .real_data = fmt::format("C4 tokenized into Megatron's token files ({} and {})",
                                files_.train, files_.validation),
       .recipe = fmt::format(
           "Recipe: AdamW (beta 0.9/0.95, epsilon 1e-5, weight decay 0.1, gradients clipped at "
           "global norm 1.0),\npeak learning rate {} after {} warm-up steps, cosine decay to {} "
           "over {} steps; global batch {}\n({}); evaluations every {} samples over {} samples. "
           "Every run logs its own seed.",
           recipe_.base_lr, recipe_.warmup_steps, recipe_.end_lr, kMaxSteps, plan.global_batch_size,
           plan.tensor_parallel > 1
               ? fmt::format("{} per data-parallel rank; {} processes, tensor parallel {} x data "
                             "parallel {}",
                             plan.batch_per_rank, plan.processes(), plan.tensor_parallel,
                             plan.world_size)
               : fmt::format("{} per process, {} processes", plan.batch_per_rank, plan.world_size),
           plan.schedule.interval_samples, plan.eval_samples)});
}

}  // namespace mlperf::benchmarks::llama31_8b
