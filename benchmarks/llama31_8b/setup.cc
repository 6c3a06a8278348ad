#include "benchmarks/llama31_8b/setup.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "base/files.h"
#include "benchmarks/readme.h"
#include "datasets/megatron/gpt_index.h"
#include "fmt/format.h"
#include "logging/mllog_keys.h"
#include "reference/optim/adam.h"

namespace mlperf::benchmarks::llama31_8b {
namespace {

namespace fs = std::filesystem;
namespace key = mllog::key;

// Samples of one rank in GPTDataset's order. Training: optimizer step s,
// micro-batch m takes the samples Megatron's pre-training sampler deals this
// rank (RankSample), so every sample of a step goes to exactly one rank.
// Evaluation: the first `count` samples of the validation order, each rank
// its contiguous share, the last batch padded and every rank giving as many
// batches. A sample of sequence_length + 1 tokens gives the inputs (all but
// the last) and the labels (all but the first).
class TokenPipeline final : public DataPipeline {
 public:
  TokenPipeline(std::unique_ptr<megatron::IndexedDataset> data, megatron::GptIndex index,
                megatron::GptIndexOptions options, bool eval, const RunPlan& plan,
                int64_t vocab_size, int64_t eval_count, int rank)
      : data_(std::move(data)),
        index_(std::move(index)),
        options_(options),
        eval_(eval),
        eval_count_(eval_count),
        vocab_size_(vocab_size),
        seq_(options.sequence_length),
        batch_(plan.batch_per_rank),
        global_(plan.global_batch_size),
        accumulation_(plan.gradient_accumulation_steps),
        eval_samples_(plan.eval_samples),
        rank_(rank),
        world_(plan.world_size),
        sample_(static_cast<size_t>(seq_ + 1)),
        tokens_(static_cast<size_t>(batch_ * seq_)),
        labels_(static_cast<size_t>(batch_ * seq_)) {}

  int64_t size() const override { return eval_ ? eval_samples_ : index_.size(); }

  void StartEval() override {
    next_ = eval_count_ * rank_ / world_;
    const int64_t largest_share = (eval_count_ + world_ - 1) / world_;
    eval_batches_left_ = (largest_share + batch_ - 1) / batch_;
  }

  absl::StatusOr<bool> Next(models::Batch* b) override {
    int64_t n = batch_;
    if (eval_) {
      if (eval_batches_left_ == 0) return false;
      --eval_batches_left_;
      const int64_t end = eval_count_ * (rank_ + 1) / world_;
      n = std::min(batch_, end - next_);
      for (int64_t j = 0; j < batch_; ++j) {
        // Padding repeats a real sample; Batch::count leaves it out.
        const int64_t at = j < n ? next_ + j : std::max<int64_t>(0, std::min(next_, end) - 1);
        if (absl::Status s = Read(at, j); !s.ok()) return s;
      }
      next_ += std::max<int64_t>(n, 0);
    } else {
      for (int64_t j = 0; j < batch_; ++j) {
        const int64_t at =
            megatron::RankSample(step_, micro_, j, rank_, world_, batch_, global_) % index_.size();
        if (absl::Status s = Read(at, j); !s.ok()) return s;
      }
      if (++micro_ == accumulation_) {
        micro_ = 0;
        ++step_;
      }
    }
    b->count = std::max<int64_t>(n, 0);
    b->inputs = {core::Tensor(tokens_.data(), {batch_, seq_}, core::DType::kI32),
                 core::Tensor(labels_.data(), {batch_, seq_}, core::DType::kI32)};
    return true;
  }

 private:
  // Sample `i` of the order into row `row` of the batch.
  absl::Status Read(int64_t i, int64_t row) {
    absl::StatusOr<int64_t> got = megatron::ReadGptSample(
        *data_, index_, options_, i, megatron::kEndOfDocument, vocab_size_, sample_);
    if (!got.ok()) return got.status();
    for (int64_t t = 0; t < seq_; ++t) {
      tokens_[row * seq_ + t] = static_cast<int32_t>(sample_[t]);
      labels_[row * seq_ + t] = static_cast<int32_t>(sample_[t + 1]);
    }
    return absl::OkStatus();
  }

  std::unique_ptr<megatron::IndexedDataset> data_;
  megatron::GptIndex index_;
  megatron::GptIndexOptions options_;
  bool eval_;
  int64_t eval_count_, vocab_size_, seq_, batch_, global_;
  int accumulation_;
  int64_t eval_samples_;
  int rank_, world_;
  int64_t step_ = 0, next_ = 0, eval_batches_left_ = 0;
  int micro_ = 0;
  std::vector<int64_t> sample_;
  std::vector<int32_t> tokens_, labels_;
};

// Samples of sequence_length + 1 tokens (sharing one token) that `tokens`
// tokens give in one epoch.
int64_t SamplesIn(int64_t tokens, int64_t sequence_length) {
  return (tokens - 1) / sequence_length;
}

}  // namespace

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
  // Every process holds the whole model (data parallel): the trainer
  // averages the gradients over placement.comm.
  return std::make_unique<models::Decoder>(c, plan_.batch_per_rank,
                                           models::Placement{.device = placement.device}, seed);
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
  if (fs::create_directories(plan_.data_root, ec); ec) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot create the folder: {}", plan_.data_root, ec.message()));
  }
  if (absl::Status s = megatron::WriteGeneratedLanguage(files_.train, files_.generated_train);
      !s.ok())
    return s;
  if (absl::Status s =
          megatron::WriteGeneratedLanguage(files_.validation, files_.generated_validation);
      !s.ok())
    return s;
  return base::WriteFileAtomically(done, files_.generated_train.Name());
}

absl::Status Llama31Setup::CheckData() const {
  absl::StatusOr<std::unique_ptr<megatron::IndexedDataset>> train =
      megatron::IndexedDataset::Open(files_.train);
  if (!train.ok()) return train.status();
  absl::StatusOr<std::unique_ptr<megatron::IndexedDataset>> validation =
      megatron::IndexedDataset::Open(files_.validation);
  if (!validation.ok()) return validation.status();
  const int64_t needed = files_.distinct_eval > 0 ? files_.distinct_eval : plan_.eval_samples;
  const int64_t held = SamplesIn((*validation)->total_tokens(), member_.seq_len);
  if (held < needed) {
    return absl::FailedPreconditionError(fmt::format(
        "{}.bin: {} tokens make {} samples of {} tokens, the evaluation needs {}",
        files_.validation, (*validation)->total_tokens(), held, member_.seq_len, needed));
  }
  if (SamplesIn((*train)->total_tokens(), member_.seq_len) < 1) {
    return absl::FailedPreconditionError(fmt::format("{}.bin: {} tokens, not one sample of {}",
                                                     files_.train, (*train)->total_tokens(),
                                                     member_.seq_len));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DataPipeline>> Llama31Setup::OpenData(Split split, uint64_t seed,
                                                                     int rank) const {
  const bool eval = split == Split::kEval;
  absl::StatusOr<std::unique_ptr<megatron::IndexedDataset>> data =
      megatron::IndexedDataset::Open(eval ? files_.validation : files_.train);
  if (!data.ok()) return data.status();
  // The reference seeds its data sets with the run's seed (the samples the
  // schedule can reach for training, one epoch for validation).
  const megatron::GptIndexOptions options{
      .sequence_length = member_.seq_len,
      .seed = static_cast<uint32_t>(seed),
      .num_samples =
          eval ? 0 : plan_.schedule.steps_through(plan_.last_epoch()) * plan_.global_batch_size};
  const std::vector<int32_t> exposed = [&] {
    std::vector<int32_t> ids(static_cast<size_t>((*data)->sequences()));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
    return ids;
  }();
  absl::StatusOr<megatron::GptIndex> index =
      megatron::BuildGptIndex((*data)->sequence_lengths(), exposed, options);
  if (!index.ok()) return index.status();
  const int64_t eval_count = files_.distinct_eval > 0 ? files_.distinct_eval : plan_.eval_samples;
  if (eval && index->size() < eval_count) {
    return absl::FailedPreconditionError(
        fmt::format("{}: {} validation samples, the evaluation needs {}", files_.validation,
                    index->size(), eval_count));
  }
  return std::make_unique<TokenPipeline>(std::move(*data), std::move(*index), options, eval, plan_,
                                         member_.vocab_size, eval_count, rank);
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
           "over {} steps; global batch {}\n({} per process, {} processes); evaluations every "
           "{} samples over {} samples. Every run logs its own seed.",
           recipe_.base_lr, recipe_.warmup_steps, recipe_.end_lr, kMaxSteps, plan.global_batch_size,
           plan.batch_per_rank, plan.world_size, plan.schedule.interval_samples,
           plan.eval_samples)});
}

}  // namespace mlperf::benchmarks::llama31_8b
