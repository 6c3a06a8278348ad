#include "benchmarks/llama2_70b_lora/setup.h"

#include <filesystem>
#include <utility>

#include "base/files.h"
#include "benchmarks/decoder_benchmark.h"
#include "benchmarks/readme.h"
#include "fmt/format.h"
#include "logging/mllog_keys.h"
#include "reference/dist/communicator.h"
#include "reference/optim/adam.h"

namespace mlperf::benchmarks::llama2_70b_lora {

namespace fs = std::filesystem;
namespace key = mllog::key;

namespace {

// The demonstration's base checkpoint: shards this small, so that it has
// several, as a real one does.
constexpr int64_t kDemoShardBytes = 64 << 10;

// torch's AdamW as the reference's Trainer runs it: decoupled weight decay
// on every adapter, the global norm clipped first.
optim::AdamOptions AdamW(const Recipe& r, bool clip) {
  return {.beta1 = 0.9f,
          .beta2 = 0.999f,
          .epsilon = 1e-8f,
          .weight_decay = static_cast<float>(r.weight_decay),
          .decoupled = true,
          .max_grad_norm = clip ? static_cast<float>(r.clip_norm) : 0.0f};
}

}  // namespace

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const RunPlan& plan,
                                              const models::DecoderConfig& member) {
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kTrainSamples, plan.train_samples);
  add(key::kEvalSamples, plan.eval_samples);
  add(key::kOptLearningRateWarmupFactor, 0.0);
  add(key::kOptLearningRateTrainingSteps, r.training_steps);
  add(key::kOptAdamwWeightDecay, r.weight_decay);
  add(key::kOptGradientClipNorm, r.clip_norm);
  add(key::kOptBaseLearningRate, r.base_lr);
  add(key::kLoraAlpha, static_cast<int64_t>(member.lora.alpha));
  add(key::kLoraRank, member.lora.rank);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  return h;
}

LoraSetup::LoraSetup(RunPlan plan, Recipe recipe, models::DecoderConfig member, std::string data,
                     std::string base, Demo demo, std::string adapters)
    : recipe_(recipe),
      member_(std::move(member)),
      data_(std::move(data)),
      base_(std::move(base)),
      demo_(std::move(demo)),
      adapters_(std::move(adapters)) {
  plan_ = std::move(plan);
}

std::string LoraSetup::AdapterDir(int run) const {
  return (fs::path(adapters_) / fmt::format("run_{}", run)).string();
}

absl::Status LoraSetup::AfterRun(const models::Model& model, int run, int data_rank) const {
  if (adapters_.empty() || data_rank != 0) return absl::OkStatus();
  return static_cast<const models::Decoder&>(model).SaveLoraAdapters(AdapterDir(run));
}

std::unique_ptr<models::Model> LoraSetup::MakeModel(const models::Placement& placement,
                                                    uint64_t seed) const {
  models::DecoderConfig c = member_;
  c.device = placement.device;
  // The adapters' dropout streams, and this data-parallel rank's samples'
  // place in the step's batch: every layout draws one process's masks.
  c.lora.seed = seed;
  c.lora.first_row = static_cast<int64_t>(placement.rank / placement.tensor_size) *
                     plan_.batch_per_rank * c.seq_len;
  return std::make_unique<models::Decoder>(c, plan_.batch_per_rank,
                                           models::Placement{.device = placement.device,
                                                             .rank = placement.tensor_rank,
                                                             .world_size = placement.tensor_size,
                                                             .comm = placement.tensor_comm},
                                           seed);
}

absl::Status LoraSetup::LoadStartingCheckpoint(models::Model& model) const {
  // The adapters keep their seeded start (A drawn, B zero): only the base is read.
  return static_cast<models::Decoder&>(model).LoadHuggingFace(base_);
}

std::unique_ptr<optim::Optimizer> LoraSetup::MakeOptimizer(const models::Model& model) const {
  return std::make_unique<optim::Adam>(AdamW(recipe_, /*clip=*/true), model.slices());
}

std::unique_ptr<optim::Optimizer> LoraSetup::MakeOptimizerFor(const models::Model& model,
                                                              dist::Communicator& data_comm) const {
  const Recipe recipe = recipe_;
  std::unique_ptr<optim::Optimizer> distributed = DistributedDecoderOptimizer(
      model, data_comm, plan_.options.gpus > 0, static_cast<float>(recipe.clip_norm),
      [recipe](std::vector<TensorSlice> shard) {
        return std::make_unique<optim::Adam>(AdamW(recipe, /*clip=*/false), std::move(shard));
      });
  return distributed != nullptr ? std::move(distributed) : MakeOptimizer(model);
}

std::unique_ptr<optim::LearningRateSchedule> LoraSetup::MakeSchedule() const {
  return std::make_unique<optim::CosineWithWarmup>(optim::CosineWithWarmupParams{
      .max_lr = recipe_.base_lr, .min_lr = 0.0, .decay_steps = recipe_.training_steps});
}

absl::Status LoraSetup::Pretrain(const std::string& dir) const {
  models::DecoderConfig c = member_;
  c.lora = {};
  c.sample_mean_loss = false;  // language modelling: every report token alike
  models::Decoder model(c, demo_.pretrain_batch, demo_.pretrain_seed);
  RunPlan plan = plan_;
  plan.world_size = 1;
  plan.global_batch_size = plan.batch_per_rank = demo_.pretrain_batch;
  plan.gradient_accumulation_steps = 1;
  absl::StatusOr<std::unique_ptr<DataPipeline>> data =
      OpenGovReportPipeline(Files("pretrain"), /*eval=*/false, demo_.pretrain_seed, 0, plan);
  if (!data.ok()) return data.status();
  if (absl::Status s = PretrainDecoder(model, **data, demo_.pretrain_steps, demo_.pretrain_lr);
      !s.ok())
    return s;
  return model.SaveHuggingFace(dir, member_.frozen_dtype, kDemoShardBytes);
}

absl::Status LoraSetup::PrepareData() const {
  if (!plan_.demo) return absl::OkStatus();
  const fs::path done = fs::path(data_) / ".generated";
  std::error_code ec;
  if (fs::exists(done, ec)) return absl::OkStatus();
  if (fs::create_directories(data_, ec); ec)
    return absl::PermissionDeniedError(fmt::format("{}: {}", data_, ec.message()));
  if (absl::Status s = govreport::WriteGeneratedTask(data_, demo_.task); !s.ok()) return s;
  // An interrupted earlier preparation may have left part of a checkpoint.
  fs::remove_all(base_, ec);
  if (absl::Status s = Pretrain(base_); !s.ok()) return s;
  return base::WriteFileAtomically(done, demo_.task.Name());
}

absl::Status LoraSetup::CheckData() const {
  absl::StatusOr<int64_t> train = CheckGovReportSplit(Files("train"));
  if (!train.ok()) return train.status();
  absl::StatusOr<int64_t> validation = CheckGovReportSplit(Files("validation"));
  if (!validation.ok()) return validation.status();
  if (*train != plan_.train_samples || *validation != plan_.eval_samples) {
    return absl::FailedPreconditionError(
        fmt::format("{}: {} training and {} validation samples, the benchmark's set has {} and {}",
                    data_, *train, *validation, plan_.train_samples, plan_.eval_samples));
  }
  std::error_code ec;
  // Adapters are never written over: refused before the first run.
  for (int run = 0; !adapters_.empty() && run < plan_.runs(); ++run) {
    if (fs::exists(AdapterDir(run), ec) || fs::is_symlink(AdapterDir(run), ec))
      return absl::AlreadyExistsError(
          fmt::format("{}: exists already; --save_adapters replaces nothing", AdapterDir(run)));
  }
  if (!fs::exists(fs::path(base_) / "model.safetensors.index.json", ec) &&
      !fs::exists(fs::path(base_) / "model.safetensors", ec) && !fs::is_regular_file(base_, ec))
    return absl::NotFoundError(
        fmt::format("{}: no base checkpoint (model.safetensors.index.json and its shards)", base_));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DataPipeline>> LoraSetup::OpenData(Split split, uint64_t seed,
                                                                  int rank) const {
  const bool eval = split == Split::kEval;
  return OpenGovReportPipeline(Files(eval ? "validation" : "train"), eval, seed, rank, plan_);
}

std::string LoraSetup::ReadmeSection() const {
  const RunPlan& plan = plan_;
  const models::DecoderConfig& m = member_;
  const govreport::GeneratedTaskOptions& t = demo_.task;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "llama2_70b_lora",
       .title = "Llama 2 70B LoRA",
       .data_name = "GovReport",
       .member = fmt::format(
           "a small member of the Llama 2 family ({} layers, hidden {}, {} query and {} key/value "
           "heads, SwiGLU {}, vocabulary {}, samples of up to {} tokens) with the reference's "
           "adapters (rank {}, alpha {}, dropout {}, on the fused qkv_proj and o_proj) over its "
           "frozen bf16 base; the base is a checkpoint in Hugging Face shards that is this member "
           "pre-trained {} steps of {} samples at rate {} on the training reports",
           m.layers, m.hidden, m.heads, m.kv_heads, m.intermediate, m.vocab_size, m.seq_len,
           m.lora.rank, m.lora.alpha, m.lora.dropout, demo_.pretrain_steps, demo_.pretrain_batch,
           demo_.pretrain_lr),
       .generated = fmt::format(
           "a generated summarisation task in the converted GovReport layout: {} training and {} "
           "validation samples, each a report of {} to {} words about one of {} topics ({:.0f}% "
           "of its words the topic's keywords), then a summary of {} words naming the topic, the "
           "report masked in the labels; a model that knows the topic reaches a loss of {:.3f}",
           t.train_samples, t.validation_samples, t.min_report, t.max_report, t.topics,
           100 * t.on_topic, t.summary, govreport::GeneratedTaskFloor(t)),
       .rules_detail =
           fmt::format("samples_count metadata, target evaluation loss {}", plan.target.Describe()),
       .real_data = fmt::format(
           "the tokenized SCROLLS GovReport set converted by scripts/convert_govreport.py ({}), "
           "the base checkpoint {}",
           data_, base_),
       .recipe = fmt::format(
           "Recipe: AdamW (beta 0.9/0.999, epsilon 1e-8, weight decay {}, gradients clipped at "
           "global norm {}),\nbase learning rate {}, cosine decay to 0 over {} steps, no warm-up; "
           "global batch {} ({} per process, {} processes{}); the loss and the evaluation loss are "
           "each sample's mean over its summary tokens, averaged over samples; evaluations every "
           "{} samples from {} on, over {} samples. Every run logs its own seed.",
           recipe_.weight_decay, recipe_.clip_norm, recipe_.base_lr, recipe_.training_steps,
           plan.global_batch_size, plan.batch_per_rank, plan.processes(),
           plan.tensor_parallel > 1 ? fmt::format(", tensor parallel {}", plan.tensor_parallel)
                                    : "",
           plan.schedule.interval_samples, plan.schedule.logged(plan.schedule.first_eval_epoch),
           plan.eval_samples)});
}

}  // namespace mlperf::benchmarks::llama2_70b_lora
