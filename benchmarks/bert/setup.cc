#include "benchmarks/bert/setup.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "base/files.h"
#include "benchmarks/readme.h"
#include "fmt/format.h"
#include "reference/io/tf_checkpoint.h"
#include "reference/models/bert_checkpoint.h"

namespace mlperf::benchmarks::bert {
namespace {

namespace fs = std::filesystem;
namespace bert_data = datasets::bert;

// The demonstration's generated starting checkpoint is drawn from this seed.
constexpr uint64_t kDemoCheckpointSeed = 28252;

class BertPipeline final : public DataPipeline {
 public:
  BertPipeline(std::unique_ptr<bert_data::BertLoader> loader, bert_data::PretrainingShape shape,
               int64_t packed_sequences)
      : loader_(std::move(loader)), shape_(shape), packed_sequences_(packed_sequences) {}
  int64_t size() const override { return loader_->size(); }
  void StartEval() override { loader_->StartEval(); }
  int64_t GlobalSamples(int64_t first, int64_t n) const override {
    return packed_sequences_ > 0 ? loader_->GlobalSamples(first, n) : -1;
  }
  absl::StatusOr<bool> Next(models::Batch* batch) override {
    bert_data::BertBatch b;
    absl::StatusOr<bool> got = loader_->Next(&b);
    if (!got.ok() || !*got) return got;
    const int64_t n = b.batch_size, s = shape_.seq_len, p = shape_.max_predictions;
    const auto view = [](const auto* data, core::Shape shape, core::DType dtype) {
      return core::Tensor(const_cast<void*>(static_cast<const void*>(data)), shape, dtype);
    };
    batch->count = b.count;
    if (packed_sequences_ > 0) {
      const int64_t k = packed_sequences_;
      batch->inputs = {view(b.input_ids, {n, s}, core::DType::kI32),
                       view(b.segment_ids, {n, s}, core::DType::kI32),
                       view(b.input_mask, {n, s}, core::DType::kF32),
                       view(b.positions, {n, s}, core::DType::kI32),
                       view(b.masked_lm_positions, {n, p}, core::DType::kI32),
                       view(b.masked_lm_ids, {n, p}, core::DType::kI32),
                       view(b.masked_lm_weights, {n, p}, core::DType::kF32),
                       view(b.next_sentence_positions, {n, k}, core::DType::kI32),
                       view(b.next_sentence_labels, {n, k}, core::DType::kI32),
                       view(b.next_sentence_weights, {n, k}, core::DType::kF32)};
      return true;
    }
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
  int64_t packed_sequences_;
};

}  // namespace

BertSetup::BertSetup(RunPlan plan, Recipe recipe, models::BertConfig member, std::string checkpoint,
                     bert_data::GeneratedBertOptions generated)
    : recipe_(recipe),
      member_(member),
      checkpoint_(std::move(checkpoint)),
      generated_(std::move(generated)) {
  plan_ = std::move(plan);
}

models::BertConfig BertSetup::ModelConfig(core::Device device) const {
  models::BertConfig c = member_;
  c.device = device;
  return c;
}

std::unique_ptr<models::Model> BertSetup::MakeModel(const models::Placement& placement,
                                                    uint64_t seed) const {
  return std::make_unique<models::Bert>(ModelConfig(placement.device), Rows(plan_.batch_per_rank),
                                        seed);
}

int64_t BertSetup::Rows(int64_t samples) const {
  const auto rows =
      static_cast<int64_t>(std::ceil(static_cast<double>(samples) / samples_per_row_));
  return std::max<int64_t>(1, rows);
}

absl::Status BertSetup::LoadStartingCheckpoint(models::Model& model) const {
  return models::LoadBertTfCheckpoint(static_cast<models::Bert&>(model), checkpoint_);
}

std::string BertSetup::IndexDir() const {
  return (fs::path(plan_.cache_dir) / "bert-index").string();
}

bert_data::PretrainingShape BertSetup::Shape() const {
  return {.seq_len = member_.seq_len,
          .max_predictions = member_.max_predictions,
          .vocab_size = member_.vocab_size};
}

// Untimed: the demonstration writes its TFRecords and its starting
// checkpoint (in TensorFlow's format, so the real loading path runs) once
// into the cache; real data is read in place. Then CheckData writes the
// record indexes into the cache, and each run reads them instead of
// walking every shard on the clock.
absl::Status BertSetup::PrepareData() const {
  if (!plan_.demo) return absl::OkStatus();
  const fs::path done = fs::path(plan_.data_root) / ".generated";
  std::error_code ec;
  if (fs::exists(done, ec)) return absl::OkStatus();
  if (ec) return absl::InvalidArgumentError(fmt::format("{}: {}", done.string(), ec.message()));
  if (absl::Status s = bert_data::WriteGeneratedBertData(plan_.data_root, generated_); !s.ok())
    return s;
  models::Bert model(ModelConfig(core::Device::kCpu), 1, kDemoCheckpointSeed);
  if (absl::Status s = models::WriteBertTfCheckpoint(model, checkpoint_); !s.ok()) return s;
  return base::WriteFileAtomically(done, "");
}

// Every shard's records (from the index files, written here when missing
// or stale) and the evaluation file's count, and the checkpoint's index
// and shards, before any model exists.
absl::Status BertSetup::CheckData() const {
  absl::StatusOr<bert_data::BertFiles> files = bert_data::ListBertData(plan_.data_root);
  if (!files.ok()) return files.status();
  int64_t train = 0, eval = 0;
  if (absl::Status s =
          bert_data::CheckBertData(*files, Shape(), plan_.eval_samples, &train, &eval, IndexDir());
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

absl::Status BertSetup::PrepareProcess() const {
  if (member_.packed_sequences == 0 || packs_ != nullptr) return absl::OkStatus();
  absl::StatusOr<bert_data::BertFiles> files = bert_data::ListBertData(plan_.data_root);
  if (!files.ok()) return files.status();
  // Every training sample read once (through the index CheckData wrote).
  absl::StatusOr<bert_data::Packs> packs = bert_data::PackBertSamples(
      files->train, Shape(),
      {.seq_len = member_.seq_len,
       .max_predictions = member_.max_predictions,
       .max_sequences = member_.packed_sequences},
      plan_.loader_threads, bert_data::BertIndexFile(IndexDir(), /*train=*/true));
  if (!packs.ok()) return packs.status();
  samples_per_row_ = static_cast<double>(packs->samples()) / static_cast<double>(packs->rows());
  packs_ = std::make_shared<const bert_data::Packs>(*std::move(packs));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DataPipeline>> BertSetup::OpenData(Split split, uint64_t seed,
                                                                  int rank) const {
  absl::StatusOr<bert_data::BertFiles> files = bert_data::ListBertData(plan_.data_root);
  if (!files.ok()) return files.status();
  bert_data::BertLoaderOptions o;
  o.files = split == Split::kTrain ? files->train : files->eval;
  o.train = split == Split::kTrain;
  o.batch_size = static_cast<int>(Rows(plan_.batch_per_rank));
  o.packed_sequences = member_.packed_sequences;
  o.packs = packs_;
  o.rank = rank;
  o.world_size = plan_.world_size;
  o.seed = seed;
  o.shape = Shape();
  o.threads = plan_.loader_threads;
  o.index_file = bert_data::BertIndexFile(IndexDir(), o.train);
  absl::StatusOr<std::unique_ptr<bert_data::BertLoader>> loader = bert_data::BertLoader::Open(o);
  if (!loader.ok()) return loader.status();
  return std::make_unique<BertPipeline>(std::move(*loader), Shape(), member_.packed_sequences);
}

absl::Status BertSetup::FitMicroBatch(int64_t memory_bytes) {
  if (plan_.options.gpus > 0) return absl::OkStatus();
  const models::BertConfig config = ModelConfig(core::Device::kCpu);
  const int64_t state = 3 * 4 * models::Bert::ParameterCount(config);
  return benchmarks::FitMicroBatch(
      [&](int64_t batch) { return models::Bert::ArenaBytes(config, Rows(batch)) + state; },
      memory_bytes, plan_);
}

std::string BertSetup::ReadmeSection() const {
  const Recipe& r = recipe_;
  const RunPlan& plan = plan_;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "bert",
       .title = "BERT",
       .data_name = "Wikipedia",
       .member = fmt::format(
           "a small member of the BERT family ({} layers, hidden {}, {} heads, sequences of {} "
           "tokens)",
           member_.layers, member_.hidden, member_.heads, member_.seq_len),
       .generated = fmt::format(
           "a generated language ({} training and {} evaluation sequences written as TFRecords "
           "in the reference's schema), starting from a generated checkpoint written in "
           "TensorFlow's format",
           generated_.train_samples, generated_.eval_samples),
       .rules_detail = fmt::format("epoch_num in samples, target masked-LM accuracy {}",
                                   plan.target.Describe()),
       .real_data = fmt::format(
           "the reference's Wikipedia TFRecords, starting from its checkpoint {}", kCheckpointName),
       .recipe = fmt::format(
           "Recipe: LAMB (beta1 {}, beta2 {}, epsilon {}, weight decay {}) after global-norm "
           "clipping at 1.0,\nglobal batch {} ({} per process, {} processes, {} accumulation "
           "step(s)), base LR {}, warm-up {} steps\nfrom step {}, linear decay to 0 over {} "
           "steps; evaluations every {} samples on {} sequences.\nEvery run logs its own seed.",
           r.beta1, r.beta2, r.epsilon, r.weight_decay, plan.global_batch_size, plan.batch_per_rank,
           plan.world_size, plan.gradient_accumulation_steps, r.base_lr, r.warmup_steps,
           r.start_warmup_step, r.train_steps, plan.schedule.interval_samples, plan.eval_samples)});
}

}  // namespace mlperf::benchmarks::bert
