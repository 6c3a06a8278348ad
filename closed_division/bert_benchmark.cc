#include "closed_division/bert_benchmark.h"

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "base/files.h"
#include "closed_division/rcp_recipes.h"
#include "datasets/bert/generated.h"
#include "datasets/bert/loader.h"
#include "fmt/format.h"
#include "logging/mllog_keys.h"
#include "quality_targets/benchmark_meta.h"
#include "reference/io/tf_checkpoint.h"
#include "reference/models/bert.h"
#include "reference/models/bert_checkpoint.h"

namespace mlperf::closed {

int64_t BertEvalIntervalSamples(int64_t global_batch_size) {
  const double raw = 0.05 * (230.23 * static_cast<double>(global_batch_size) + 3'000'000.0);
  const int64_t interval = static_cast<int64_t>(raw) / 25'000 * 25'000;
  return std::max<int64_t>(interval, 25'000);  // the rules skip 0
}

namespace {

namespace key = mllog::key;
namespace fs = std::filesystem;
namespace bert_data = datasets::bert;

// The reference's data and checkpoint (references.md 4.2, 4.3).
constexpr int64_t kEvalSamples = 10'000;
constexpr std::string_view kCheckpointName = "model.ckpt-28252";
// The demonstration's generated starting checkpoint is drawn from this seed.
constexpr uint64_t kDemoCheckpointSeed = 28252;

const BenchmarkInfo& Info() {
  static const BenchmarkInfo info = {
      .name = "bert",
      .summary = "BERT-Large on Wikipedia to masked-LM accuracy 0.720",
      .ruleset = "4.0.0",
      .required_runs = *meta::ResultFiles("bert"),
      .allowed_missed_runs = meta::OlympicDropPerSide("bert"),
      .target = 0.72,  // closed_bert: eval_accuracy >= 0.72
      .metric = "masked-LM accuracy",
      .train_samples_at_stop = true,
      .attention = true};
  return info;
}

// The closed-division LAMB hyperparameters (references.md 4.4), all logged.
struct BertRecipe {
  double base_lr = 3.5e-4;
  int64_t train_steps = 13'700;  // opt_learning_rate_training_steps
  int64_t warmup_steps = 0;
  int64_t start_warmup_step = 0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-6, weight_decay = 0.01;
};

class BertPipeline final : public DataPipeline {
 public:
  BertPipeline(std::unique_ptr<bert_data::BertLoader> loader, bert_data::PretrainingShape shape)
      : loader_(std::move(loader)), shape_(shape) {}
  int64_t size() const override { return loader_->size(); }
  void StartEval() override { loader_->StartEval(); }
  absl::StatusOr<bool> Next(models::Batch* batch) override {
    bert_data::BertBatch b;
    absl::StatusOr<bool> got = loader_->Next(&b);
    if (!got.ok() || !*got) return got;
    const int64_t n = b.batch_size, s = shape_.seq_len, p = shape_.max_predictions;
    const auto view = [](const auto* data, core::Shape shape, core::DType dtype) {
      return core::Tensor(const_cast<void*>(static_cast<const void*>(data)), shape, dtype);
    };
    batch->count = b.count;
    batch->inputs = {view(b.input_ids, {n, s}, core::DType::kI32),
                     view(b.segment_ids, {n, s}, core::DType::kI32),
                     view(b.input_mask, {n, s}, core::DType::kF32),
                     view(b.masked_lm_positions, {n, p}, core::DType::kI32),
                     view(b.masked_lm_ids, {n, p}, core::DType::kI32),
                     view(b.masked_lm_weights, {n, p}, core::DType::kF32),
                     view(b.next_sentence_labels, {n}, core::DType::kI32)};
    return true;
  }

 private:
  std::unique_ptr<bert_data::BertLoader> loader_;
  bert_data::PretrainingShape shape_;
};

class BertSetup final : public BenchmarkSetup {
 public:
  BertSetup(RunPlan plan, BertRecipe recipe, models::BertConfig member, std::string checkpoint,
            bert_data::GeneratedBertOptions generated)
      : recipe_(recipe),
        member_(member),
        checkpoint_(std::move(checkpoint)),
        generated_(std::move(generated)) {
    plan_ = std::move(plan);
  }

  std::vector<Hyperparameter> Hyperparameters() const override {
    const BertRecipe& r = recipe_;
    std::vector<Hyperparameter> h;
    const auto add = [&h](std::string_view name, json::Value value) {
      h.emplace_back(std::string(name), std::move(value));
    };
    add(key::kGlobalBatchSize, plan_.global_batch_size);
    add(key::kGradientAccumulationSteps, plan_.gradient_accumulation_steps);
    add(key::kOptName, mllog::optimizer::kLamb);
    add(key::kOptBaseLearningRate, r.base_lr);
    add(key::kOptLambEpsilon, r.epsilon);
    add(key::kOptLearningRateTrainingSteps, r.train_steps);
    add(key::kOptLearningRateWarmupSteps, r.warmup_steps);
    add(key::kNumWarmupSteps, r.warmup_steps);
    add(key::kStartWarmupStep, r.start_warmup_step);
    add(key::kOptLambBeta1, r.beta1);
    add(key::kOptLambBeta2, r.beta2);
    add(key::kOptLambWeightDecayRate, r.weight_decay);
    add(key::kOptLambLearningRateDecayPolyPower, 1.0);
    add(key::kMaxSequenceLength, member_.seq_len);
    add(key::kEvalSamples, plan_.eval_samples);
    return h;
  }

  models::BertConfig ModelConfig(core::Device device) const {
    models::BertConfig c = member_;
    c.device = device;
    return c;
  }

  std::unique_ptr<models::Model> MakeModel(core::Device device, uint64_t seed) const override {
    return std::make_unique<models::Bert>(ModelConfig(device), plan_.batch_per_rank, seed);
  }

  // The seed drew the dropout streams (and any tensor the checkpoint lacks,
  // none for the reference's); the weights come from the checkpoint.
  absl::Status LoadStartingCheckpoint(models::Model& model) const override {
    return models::LoadBertTfCheckpoint(static_cast<models::Bert&>(model), checkpoint_);
  }

  train::TrainerConfig TrainerConfig() const override {
    const BertRecipe& r = recipe_;
    return {.optimizer = train::OptimizerKind::kLamb,
            .global_batch_size = plan_.global_batch_size,
            .base_lr = r.base_lr,
            .poly_power = 1.0,
            .weight_decay = r.weight_decay,
            .schedule = train::ScheduleKind::kBert,
            .lamb_beta1 = r.beta1,
            .lamb_beta2 = r.beta2,
            .lamb_epsilon = r.epsilon,
            .max_grad_norm = 1.0,
            .train_steps = r.train_steps,
            .warmup_steps = r.warmup_steps,
            .start_warmup_step = r.start_warmup_step,
            .gradient_accumulation_steps = plan_.gradient_accumulation_steps};
  }

  // Untimed: the demonstration writes its TFRecords and its starting
  // checkpoint (in TensorFlow's format, so the real loading path runs) once
  // into the cache; real data is read in place. Then CheckData writes the
  // record indexes into the cache, and each run reads them instead of
  // walking every shard on the clock.
  absl::Status PrepareData() const override {
    if (!plan_.demo) return absl::OkStatus();
    const fs::path done = fs::path(plan_.data_root) / ".generated";
    if (fs::exists(done)) return absl::OkStatus();
    if (absl::Status s = bert_data::WriteGeneratedBertData(plan_.data_root, generated_); !s.ok())
      return s;
    models::Bert model(ModelConfig(core::Device::kCpu), 1, kDemoCheckpointSeed);
    if (absl::Status s = models::WriteBertTfCheckpoint(model, checkpoint_); !s.ok()) return s;
    return base::WriteFileAtomically(done, "");
  }

  // Every shard's records (from the index files, written here when missing
  // or stale) and the evaluation file's count, and the checkpoint's index
  // and shards, before any model exists.
  absl::Status CheckData() const override {
    absl::StatusOr<bert_data::BertFiles> files = bert_data::ListBertData(plan_.data_root);
    if (!files.ok()) return files.status();
    int64_t train = 0, eval = 0;
    if (absl::Status s = bert_data::CheckBertData(*files, Shape(), plan_.eval_samples, &train,
                                                  &eval, IndexDir());
        !s.ok())
      return s;
    if (train < plan_.global_batch_size) {
      return absl::FailedPreconditionError(
          fmt::format("{}: {} training samples, fewer than one global batch of {}", plan_.data_root,
                      train, plan_.global_batch_size));
    }
    absl::StatusOr<io::TfCheckpoint> checkpoint = io::TfCheckpoint::Open(checkpoint_);
    return checkpoint.ok() ? absl::OkStatus() : checkpoint.status();
  }

  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override {
    absl::StatusOr<bert_data::BertFiles> files = bert_data::ListBertData(plan_.data_root);
    if (!files.ok()) return files.status();
    bert_data::BertLoaderOptions o;
    o.files = split == Split::kTrain ? files->train : files->eval;
    o.train = split == Split::kTrain;
    o.batch_size = static_cast<int>(plan_.batch_per_rank);
    o.rank = rank;
    o.world_size = plan_.world_size;
    o.seed = seed;
    o.shape = Shape();
    o.threads = plan_.loader_threads;
    o.index_file = bert_data::BertIndexFile(IndexDir(), o.train);
    absl::StatusOr<std::unique_ptr<bert_data::BertLoader>> loader = bert_data::BertLoader::Open(o);
    if (!loader.ok()) return loader.status();
    return std::make_unique<BertPipeline>(std::move(*loader), Shape());
  }

  std::string ReadmeSection() const override;

  // Gradient accumulation when a rank's batch does not fit its memory: the
  // model's arenas at the micro-batch, plus LAMB's two moments and the
  // accumulation sums (three parameter-sized arrays). GPUs are not fitted.
  absl::Status FitMicroBatch(int64_t memory_bytes) {
    if (plan_.options.gpus > 0) return absl::OkStatus();
    const models::BertConfig config = ModelConfig(core::Device::kCpu);
    const int64_t state = 3 * 4 * models::Bert::ParameterCount(config);
    return closed::FitMicroBatch(
        [&](int64_t batch) { return models::Bert::ArenaBytes(config, batch) + state; },
        memory_bytes, plan_);
  }

 private:
  std::string IndexDir() const { return (fs::path(plan_.cache_dir) / "bert-index").string(); }
  bert_data::PretrainingShape Shape() const {
    return {.seq_len = member_.seq_len,
            .max_predictions = member_.max_predictions,
            .vocab_size = member_.vocab_size};
  }

  BertRecipe recipe_;
  models::BertConfig member_;
  std::string checkpoint_;  // the starting checkpoint's prefix (path without .index)
  bert_data::GeneratedBertOptions generated_;
};

std::string BertSetup::ReadmeSection() const {
  const BertRecipe& r = recipe_;
  const RunPlan& plan = plan_;
  std::string text;
  if (plan.demo) {
    text += fmt::format(
        "# {0}: DEMONSTRATION on generated data, not Wikipedia\n\n"
        "The results in `results/{0}/bert/` come from `run_closed --bench bert` with no "
        "`--data`: a small\n"
        "member of the BERT family ({1} layers, hidden {2}, {3} heads, sequences of {4} tokens) "
        "trained on a\n"
        "generated language ({5} training and {6} evaluation sequences written as TFRecords in "
        "the reference's\n"
        "schema), starting from a generated checkpoint written in TensorFlow's format. They are "
        "NOT a BERT /\n"
        "Wikipedia result and must never be reported as one. The logs follow the closed-division "
        "BERT rules\n"
        "of training ruleset {7} (epoch_num in samples, target masked-LM accuracy 0.72).\n\n",
        plan.system_name, member_.layers, member_.hidden, member_.heads, member_.seq_len,
        generated_.train_samples, generated_.eval_samples, Info().ruleset);
  } else {
    text += fmt::format(
        "# {}: BERT-Large, closed division\n\n"
        "Produced by `run_closed --bench bert` on the reference's Wikipedia TFRecords, starting "
        "from its\ncheckpoint {}, ruleset {}.\n\n",
        plan.system_name, kCheckpointName, Info().ruleset);
  }
  text += fmt::format(
      "Recipe: LAMB (beta1 {}, beta2 {}, epsilon {}, weight decay {}) after global-norm "
      "clipping at 1.0,\nglobal batch {} ({} per process, {} processes, {} accumulation "
      "step(s)), base LR {}, warm-up {} steps\nfrom step {}, linear decay to 0 over {} steps; "
      "evaluations every {} samples on {} sequences.\nEvery run logs its own seed.\n\n",
      r.beta1, r.beta2, r.epsilon, r.weight_decay, plan.global_batch_size, plan.batch_per_rank,
      plan.world_size, plan.gradient_accumulation_steps, r.base_lr, r.warmup_steps,
      r.start_warmup_step, r.train_steps, plan.schedule.interval_samples, plan.eval_samples);
  return text + RcpBypassNote(plan);
}

absl::StatusOr<BertRecipe> RecipeOf(const RcpReference& ref) {
  BertRecipe r;
  double train_steps = 0, warmup = 0, start = 0;
  for (const auto& [field, name] :
       {std::pair<double*, const char*>{&r.base_lr, "opt_base_learning_rate"},
        {&r.epsilon, "opt_epsilon"},
        {&train_steps, "opt_learning_rate_training_steps"},
        {&warmup, "num_warmup_steps"},
        {&start, "start_warmup_step"},
        {&r.beta1, "opt_lamb_beta_1"},
        {&r.beta2, "opt_lamb_beta_2"},
        {&r.weight_decay, "opt_lamb_weight_decay_rate"}}) {
    absl::StatusOr<double> v = ref.Number(name);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  r.train_steps = static_cast<int64_t>(train_steps);
  r.warmup_steps = static_cast<int64_t>(warmup);
  r.start_warmup_step = static_cast<int64_t>(start);
  return r;
}

// Wikipedia at `ranks` processes: the smallest RCP batch size that splits
// over the ranks (the fewest samples to converge); else the smallest RCP's
// recipe at one sample per rank.
absl::Status WikipediaPlan(int ranks, RunPlan& plan, BertRecipe& recipe) {
  absl::StatusOr<std::vector<RcpReference>> refs = ReadRcpReferences(Info().ruleset, "bert");
  if (!refs.ok()) return refs.status();
  const RcpReference* chosen = nullptr;
  const RcpReference* smallest = &refs->front();
  for (const RcpReference& r : *refs) {
    if (r.global_batch_size < smallest->global_batch_size) smallest = &r;
    if (r.global_batch_size % ranks == 0 &&
        (chosen == nullptr || r.global_batch_size < chosen->global_batch_size))
      chosen = &r;
  }
  plan.rcp_batch_size = chosen != nullptr;
  plan.global_batch_size = chosen != nullptr ? chosen->global_batch_size : ranks;
  absl::StatusOr<BertRecipe> r = RecipeOf(chosen != nullptr ? *chosen : *smallest);
  if (!r.ok()) return r.status();
  recipe = *r;
  return absl::OkStatus();
}

// Where the reference's starting checkpoint may sit under --data.
absl::StatusOr<std::string> FindCheckpoint(const fs::path& data) {
  for (const fs::path& dir : {data, data / "phase1", data / "checkpoint"}) {
    const fs::path prefix = dir / kCheckpointName;
    std::error_code ec;
    if (fs::is_regular_file(fs::path(prefix.string() + ".index"), ec)) return prefix.string();
  }
  return absl::InvalidArgumentError(
      fmt::format("--data {}: no {}.index there or in phase1/ or checkpoint/ (BERT starts from the "
                  "reference's TensorFlow checkpoint)",
                  data.string(), kCheckpointName));
}

class BertBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override { return Info(); }

  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(
      const RunnerOptions& options, int world_size, const ProcessShare& share) const override {
    RunPlan plan;
    plan.options = options;
    plan.demo = options.data_dir.empty();
    plan.data_name = "Wikipedia";
    plan.model_name = "BERT-Large";
    if (options.member != "" && options.member != "full" && options.member != "small") {
      return absl::InvalidArgumentError(
          fmt::format("model size '{}': expected full or small", options.member));
    }
    if (!options.optimizer.empty() && options.optimizer != "lamb") {
      return absl::InvalidArgumentError(fmt::format(
          "--optimizer={}: closed-division BERT trains with LAMB only", options.optimizer));
    }
    const bool small = options.member.empty() ? plan.demo : options.member == "small";
    const bert_data::GeneratedBertOptions generated;
    models::BertConfig member;  // BERT-Large
    BertRecipe recipe;
    int64_t interval = 0;
    if (small) {
      member = {.vocab_size = generated.vocab_size,
                .hidden = 64,
                .layers = 2,
                .heads = 4,
                .intermediate = 256,
                .max_positions = generated.seq_len,
                .seq_len = generated.seq_len,
                .max_predictions = generated.max_predictions};
      recipe = {.base_lr = 5e-2, .train_steps = 300, .warmup_steps = 40, .weight_decay = 0.01};
      plan.global_batch_size = 32;
      interval = 800;
    } else if (absl::Status s = WikipediaPlan(world_size, plan, recipe); !s.ok()) {
      return s;
    }
    plan.member_name = small ? fmt::format(
                                   "BERT, {} layers, hidden {}, {} heads, {} tokens (the embedded "
                                   "default's)",
                                   member.layers, member.hidden, member.heads, member.seq_len)
                             : "BERT-Large (24 layers, hidden 1024, 16 heads), 512 tokens";
    if (options.batch_per_rank > 0) plan.global_batch_size = options.batch_per_rank * world_size;
    if (!small) interval = BertEvalIntervalSamples(plan.global_batch_size);
    if (absl::Status s = CompletePlan(options, world_size, share.cores,
                                      fmt::format("generated-bert-{}", generated.Name()), plan);
        !s.ok())
      return s;
    plan.train_samples = plan.demo ? generated.train_samples : 0;
    plan.eval_samples = plan.demo ? generated.eval_samples : kEvalSamples;
    std::string checkpoint;
    if (plan.demo) {
      checkpoint = (fs::path(plan.data_root) / kCheckpointName).string();
    } else {
      absl::StatusOr<std::string> found = FindCheckpoint(options.data_dir);
      if (!found.ok()) return found.status();
      checkpoint = *found;
    }
    // Evaluations at the first step boundary at or past each multiple of the
    // interval; the run ends where the learning rate reaches 0.
    plan.schedule = {.log_samples = true,
                     .interval_samples = interval,
                     .samples_per_step = plan.global_batch_size};
    const int64_t limit = recipe.train_steps * plan.global_batch_size;
    plan.schedule.last_epoch = static_cast<int>((limit + interval - 1) / interval);
    auto setup =
        std::make_unique<BertSetup>(std::move(plan), recipe, member, checkpoint, generated);
    if (share.memory_bytes > 0) {
      if (absl::Status s = setup->FitMicroBatch(share.memory_bytes); !s.ok()) return s;
    }
    return setup;
  }
};

}  // namespace

std::unique_ptr<Benchmark> MakeBertBenchmark() { return std::make_unique<BertBenchmark>(); }

}  // namespace mlperf::closed
