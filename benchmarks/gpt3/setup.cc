#include "benchmarks/gpt3/setup.h"

#include <filesystem>
#include <utility>

#include "base/files.h"
#include "benchmarks/decoder_benchmark.h"
#include "benchmarks/readme.h"
#include "fmt/format.h"
#include "logging/mllog_keys.h"
#include "reference/dist/communicator.h"
#include "reference/optim/adam.h"

namespace mlperf::benchmarks::gpt3 {

namespace fs = std::filesystem;
namespace key = mllog::key;

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const RunPlan& plan) {
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  add(key::kOptName, "adam");
  add(key::kOptAdamBeta1, 0.9);
  add(key::kOptAdamBeta2, 0.95);
  add(key::kOptAdamEpsilon, 1e-08);
  add(key::kOptWeightDecay, 0.1);
  add(key::kOptBaseLearningRate, r.base_lr);
  add(key::kOptEndLearningRate, r.end_lr);
  add(key::kOptLearningRateDecaySteps, r.decay_steps);
  add(key::kOptLearningRateWarmupSteps, r.warmup_steps);
  add(key::kOptLearningRateDecaySchedule, "cosine with linear warmup");
  add(key::kOptGradientClipNorm, 1.0);
  add(key::kInitCheckpointStep, r.checkpoint_step);
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  add(key::kMaxSequenceLength, int64_t{2048});
  add(key::kEvalSamples, plan.eval_samples);
  return h;
}

Gpt3Setup::Gpt3Setup(RunPlan plan, Recipe recipe, models::DecoderConfig member, Demo demo)
    : recipe_(recipe), member_(std::move(member)), demo_(std::move(demo)) {
  plan_ = std::move(plan);
}

std::string Gpt3Setup::CheckpointDir() const {
  return (fs::path(plan_.data_root) / "checkpoint").string();
}

TokenData Gpt3Setup::Tokens(Split split) const {
  const bool eval = split == Split::kEval;
  return {.prefix = (fs::path(plan_.data_root) / (eval ? "validation" : "train")).string(),
          .sequence_length = member_.seq_len,
          .vocab_size = member_.vocab_size,
          .eval_count = demo_.eval_count};
}

std::unique_ptr<models::Model> Gpt3Setup::MakeModel(const models::Placement& placement,
                                                    uint64_t seed) const {
  models::DecoderConfig c = member_;
  c.device = placement.device;
  // Data parallel: every process the whole model.
  return std::make_unique<models::Decoder>(c, plan_.batch_per_rank,
                                           models::Placement{.device = placement.device}, seed);
}

absl::Status Gpt3Setup::LoadStartingCheckpoint(models::Model& model) const {
  return static_cast<models::Decoder&>(model).LoadMegatronGpt(CheckpointDir());
}

std::unique_ptr<optim::Optimizer> Gpt3Setup::MakeOptimizer(const models::Model& model) const {
  // Megatron's Adam with decoupled weight decay, on the norms and biases
  // too (the reference's --do-layernorm-bias-weight-decay).
  std::vector<TensorSlice> slices = model.slices();
  for (TensorSlice& s : slices) s.no_weight_decay = false;
  return std::make_unique<optim::Adam>(optim::AdamOptions{.beta1 = 0.9f,
                                                          .beta2 = 0.95f,
                                                          .epsilon = 1e-8f,
                                                          .weight_decay = 0.1f,
                                                          .decoupled = true,
                                                          .max_grad_norm = 1.0f},
                                       std::move(slices));
}

std::unique_ptr<optim::LearningRateSchedule> Gpt3Setup::MakeSchedule() const {
  return std::make_unique<optim::CosineWithWarmup>(
      optim::CosineWithWarmupParams{.max_lr = recipe_.base_lr,
                                    .min_lr = recipe_.end_lr,
                                    .warmup_steps = recipe_.warmup_steps,
                                    .decay_steps = recipe_.decay_steps,
                                    .start_step = recipe_.checkpoint_step});
}

absl::Status Gpt3Setup::Pretrain(const std::string& dir) const {
  models::Decoder model(member_, demo_.pretrain_batch, demo_.pretrain_seed);
  // One process, the pre-training's batch, its own steps and rate.
  RunPlan plan = plan_;
  plan.world_size = 1;
  plan.global_batch_size = plan.batch_per_rank = demo_.pretrain_batch;
  plan.gradient_accumulation_steps = 1;
  plan.options.max_epochs = 0;
  plan.schedule = {.last_epoch = static_cast<int>(demo_.pretrain_steps),
                   .interval_samples = demo_.pretrain_batch,
                   .samples_per_step = demo_.pretrain_batch};
  absl::StatusOr<std::unique_ptr<DataPipeline>> data =
      OpenTokenPipeline(Tokens(Split::kTrain), Split::kTrain, demo_.pretrain_seed, 0, plan);
  if (!data.ok()) return data.status();
  if (absl::Status s = PretrainDecoder(model, **data, demo_.pretrain_steps, demo_.pretrain_lr);
      !s.ok())
    return s;
  return model.SaveMegatronGpt(dir);
}

absl::Status Gpt3Setup::PrepareData() const {
  const fs::path done = fs::path(plan_.data_root) / ".generated";
  std::error_code ec;
  if (fs::exists(done, ec)) return absl::OkStatus();
  if (absl::Status s = WriteGeneratedTokenFiles(Tokens(Split::kTrain), demo_.train,
                                                Tokens(Split::kEval), demo_.validation);
      !s.ok())
    return s;
  // An interrupted earlier preparation may have left part of a checkpoint.
  fs::remove_all(CheckpointDir(), ec);
  if (absl::Status s = Pretrain(CheckpointDir()); !s.ok()) return s;
  return base::WriteFileAtomically(done, demo_.train.Name());
}

absl::Status Gpt3Setup::CheckData() const {
  if (absl::Status s = CheckTokenFiles(Tokens(Split::kTrain), Tokens(Split::kEval)); !s.ok())
    return s;
  std::error_code ec;
  if (!fs::is_directory(CheckpointDir(), ec))
    return absl::NotFoundError(fmt::format("{}: no starting checkpoint", CheckpointDir()));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DataPipeline>> Gpt3Setup::OpenData(Split split, uint64_t seed,
                                                                  int rank) const {
  return OpenTokenPipeline(Tokens(split), split, seed, rank, plan_);
}

std::string Gpt3Setup::ReadmeSection() const {
  const RunPlan& plan = plan_;
  const models::DecoderConfig& m = member_;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "gpt3",
       .title = "GPT-3",
       .data_name = "C4",
       .member = fmt::format(
           "a small member of the GPT family ({} layer, hidden {}, {} heads, feed-forward {}, "
           "vocabulary {}, samples of {} tokens with attention within chunks of {}), resumed "
           "from a starting checkpoint in Megatron's Zarr form that is this member pre-trained "
           "{} steps of {} samples at rate {} (its own rate: the rules' rate binds the timed "
           "runs)",
           m.layers, m.hidden, m.heads, m.intermediate, m.vocab_size, m.seq_len, m.attention_chunk,
           demo_.pretrain_steps, demo_.pretrain_batch, demo_.pretrain_lr),
       .generated = fmt::format(
           "a generated first-order Markov language in Megatron's token files ({} training and "
           "{} validation documents of {} to {} tokens, {} equally likely successors per "
           "token); the evaluation reads {} validation samples",
           demo_.train.documents, demo_.validation.documents, demo_.train.min_length,
           demo_.train.max_length, demo_.train.successors, demo_.eval_count),
       .rules_detail = fmt::format("epoch_num in tokens since the starting checkpoint, target "
                                   "log perplexity {}",
                                   plan.target.Describe()),
       .real_data = "C4 in Megatron's token files",
       .recipe = fmt::format(
           "Recipe: Adam with decoupled weight decay 0.1 (beta 0.9/0.95, epsilon 1e-8), "
           "gradients clipped at global\nnorm 1.0, peak rate {} after {} warm-up steps, cosine "
           "decay to {} over {} steps, resumed at the\ncheckpoint's step {}; global batch {} "
           "({} per process, {} processes); evaluations every {} samples.\nEvery run logs its "
           "own seed.",
           recipe_.base_lr, recipe_.warmup_steps, recipe_.end_lr, recipe_.decay_steps,
           recipe_.checkpoint_step, plan.global_batch_size, plan.batch_per_rank, plan.world_size,
           plan.schedule.interval_samples)});
}

}  // namespace mlperf::benchmarks::gpt3
