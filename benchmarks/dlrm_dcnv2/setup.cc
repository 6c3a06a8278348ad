#include "benchmarks/dlrm_dcnv2/setup.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "base/files.h"
#include "benchmarks/readme.h"
#include "datasets/criteo/day_files.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "logging/mllog_keys.h"
#include "reference/eval/auc.h"
#include "reference/optim/adagrad.h"

namespace mlperf::benchmarks::dlrm_dcnv2 {
namespace {

namespace fs = std::filesystem;
namespace key = mllog::key;

// Batches of one rank from the mapped days. Training: global batch s is
// rows [s * G, (s + 1) * G) of the training days end to end (wrapping into
// the next epoch), and rank r takes its contiguous [r * B, (r + 1) * B) of
// it: every sample once per epoch over all ranks, the same on any number of
// them. Evaluation: rank r takes its contiguous share of the validation
// rows, the last batch padded, then batches of padding alone (count 0)
// until every rank has given as many (the model's forward is collective
// over the ranks that hold its tables). A tiled evaluation set (the demonstration's)
// has `tiled_to` samples, its validation rows repeated: each is read once
// and the evaluator counts its copies.
class CriteoPipeline final : public DataPipeline {
 public:
  CriteoPipeline(std::unique_ptr<criteo::CriteoDays> days, bool eval, const RunPlan& plan,
                 const models::DlrmConfig& member, int rank, int64_t tiled_to)
      : days_(std::move(days)),
        eval_(eval),
        tiled_to_(tiled_to),
        table_rows_(member.table_rows),
        batch_(plan.batch_per_rank),
        global_(plan.global_batch_size),
        rank_(rank),
        world_(plan.world_size),
        dense_(static_cast<size_t>(batch_ * criteo::kDenseFeatures)),
        labels_(static_cast<size_t>(batch_)) {
    for (int64_t hot : days_->multi_hot()) ids_.emplace_back(static_cast<size_t>(batch_ * hot));
  }

  int64_t size() const override {
    if (!eval_) return days_->train_rows();
    return tiled_to_ > 0 ? tiled_to_ : days_->validation_rows();
  }
  void StartEval() override {
    next_ = days_->validation_rows() * rank_ / world_;
    const int64_t largest_share = (days_->validation_rows() + world_ - 1) / world_;
    eval_batches_left_ = (largest_share + batch_ - 1) / batch_;
  }

  absl::StatusOr<bool> Next(models::Batch* b) override {
    int64_t n = batch_;
    if (eval_) {
      if (eval_batches_left_ == 0) return false;
      --eval_batches_left_;
      const int64_t end = days_->validation_rows() * (rank_ + 1) / world_;
      n = std::min(batch_, end - next_);  // 0 once the share is done
      // Padding: copies of the batch's first sample (of the share's last
      // one in a batch of padding alone).
      const int64_t pad_row = n > 0 ? next_ : std::max<int64_t>(0, end - 1);
      if (n > 0) {
        if (absl::Status s = Copy(next_, n, 0); !s.ok()) return s;
      }
      for (int64_t pad = n; pad < batch_; ++pad)
        if (absl::Status s = Copy(pad_row, 1, pad); !s.ok()) return s;
      next_ += n;
    } else {
      const int64_t rows = days_->train_rows();
      const int64_t first = (step_ * global_ + rank_ * batch_) % rows;
      const int64_t head = std::min(batch_, rows - first);
      if (absl::Status s = Copy(first, head, 0); !s.ok()) return s;
      if (head < batch_) {
        if (absl::Status s = Copy(0, batch_ - head, head); !s.ok()) return s;
      }
      ++step_;
    }
    b->count = n;
    b->inputs = {core::Tensor(dense_.data(), {batch_, criteo::kDenseFeatures}, core::DType::kF32)};
    for (size_t t = 0; t < ids_.size(); ++t)
      b->inputs.emplace_back(ids_[t].data(), core::Shape{batch_, days_->multi_hot()[t]},
                             core::DType::kI32);
    b->inputs.emplace_back(labels_.data(), core::Shape{batch_}, core::DType::kF32);
    return true;
  }

 private:
  // `count` rows from `first` into the batch from sample `at` on.
  absl::Status Copy(int64_t first, int64_t count, int64_t at) {
    criteo::RowsOut out{.dense = dense_.data() + at * criteo::kDenseFeatures,
                        .labels = labels_.data() + at};
    for (size_t t = 0; t < ids_.size(); ++t)
      out.ids.push_back(ids_[t].data() + at * days_->multi_hot()[t]);
    return days_->CopyRows(eval_, first, count, table_rows_, out);
  }

  std::unique_ptr<criteo::CriteoDays> days_;
  bool eval_;
  int64_t tiled_to_;
  std::vector<int64_t> table_rows_;
  int64_t batch_, global_;
  int rank_, world_;
  int64_t next_ = 0, step_ = 0, eval_batches_left_ = 0;
  std::vector<float> dense_, labels_;
  std::vector<std::vector<int32_t>> ids_;
};

}  // namespace

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const RunPlan& plan) {
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kOptName, "adagrad");
  add(key::kOptBaseLearningRate, r.base_lr);
  add(key::kOptAdagradLearningRateDecay, 0);
  add(key::kOptWeightDecay, 0);
  add(key::kOptAdagradInitialAccumulatorValue, 0);
  add(key::kOptAdagradEpsilon, r.epsilon);
  add(key::kOptLearningRateWarmupSteps, 0);
  add(key::kOptLearningRateDecayStartStep, 0);
  add(key::kOptLearningRateDecaySteps, 0);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  add(key::kTrainSamples, plan.train_samples);
  add(key::kEvalSamples, plan.eval_samples);
  return h;
}

DlrmSetup::DlrmSetup(RunPlan plan, Recipe recipe, models::DlrmConfig member,
                     criteo::GeneratedCriteoOptions generated)
    : recipe_(recipe), member_(std::move(member)), generated_(std::move(generated)) {
  plan_ = std::move(plan);
  member_.embedding_lr = static_cast<float>(recipe_.base_lr);
  member_.embedding_epsilon = static_cast<float>(recipe_.epsilon);
}

std::unique_ptr<models::Model> DlrmSetup::MakeModel(const models::Placement& placement,
                                                    uint64_t seed) const {
  models::DlrmConfig c = member_;
  c.device = placement.device;
  return std::make_unique<models::Dlrm>(c, plan_.batch_per_rank, seed, placement);
}

std::unique_ptr<optim::Optimizer> DlrmSetup::MakeOptimizer(const models::Model& model) const {
  return std::make_unique<optim::Adagrad>(
      optim::AdagradOptions{.epsilon = static_cast<float>(recipe_.epsilon)}, model.slices());
}

std::unique_ptr<optim::LearningRateSchedule> DlrmSetup::MakeSchedule() const {
  return std::make_unique<optim::ConstantRate>(recipe_.base_lr);
}

std::unique_ptr<eval::Evaluator> DlrmSetup::MakeEvaluator(models::Model& model) const {
  auto& dlrm = static_cast<models::Dlrm&>(model);
  return std::make_unique<eval::AucEvaluator>(
      model, [&dlrm](const models::Batch& b) -> const core::Tensor& { return dlrm.Predict(b); },
      TiledTo());
}

absl::Status DlrmSetup::PrepareData() const {
  if (!plan_.demo) return absl::OkStatus();
  const fs::path done = fs::path(plan_.data_root) / ".generated";
  std::error_code ec;
  if (fs::exists(done, ec)) return absl::OkStatus();
  if (absl::Status s = criteo::WriteGeneratedCriteo(plan_.data_root, generated_); !s.ok()) return s;
  return base::WriteFileAtomically(done, generated_.Name());
}

absl::Status DlrmSetup::CheckData() const {
  absl::StatusOr<std::unique_ptr<criteo::CriteoDays>> days =
      criteo::CriteoDays::Open(plan_.data_root, member_.tables());
  if (!days.ok()) return days.status();
  if ((*days)->multi_hot() != member_.multi_hot) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: multi-hot sizes {}, the model expects {} (the reference's synthetic multi-hot set)",
        (*days)->day_file(0, "sparse_multi_hot.npz"), fmt::join((*days)->multi_hot(), ","),
        fmt::join(member_.multi_hot, ",")));
  }
  const int64_t validation = (*days)->validation_rows();
  if ((*days)->train_rows() != plan_.train_samples ||
      (TiledTo() > 0 ? validation > plan_.eval_samples : validation != plan_.eval_samples)) {
    return absl::FailedPreconditionError(fmt::format(
        "{}: {} training and {} validation samples, expected {} and {}", plan_.data_root,
        (*days)->train_rows(), validation, plan_.train_samples, plan_.eval_samples));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<DataPipeline>> DlrmSetup::OpenData(Split split, uint64_t,
                                                                  int rank) const {
  absl::StatusOr<std::unique_ptr<criteo::CriteoDays>> days =
      criteo::CriteoDays::Open(plan_.data_root, member_.tables());
  if (!days.ok()) return days.status();
  return std::make_unique<CriteoPipeline>(std::move(*days), split == Split::kEval, plan_, member_,
                                          rank, TiledTo());
}

std::string DlrmSetup::ReadmeSection() const {
  const RunPlan& plan = plan_;
  return benchmarks::ReadmeSection(
      plan,
      {.benchmark = "dlrm_dcnv2",
       .title = "DLRM-dcnv2",
       .data_name = "Criteo 1TB multi-hot",
       .member =
           fmt::format("a small member of the DLRM-dcnv2 family (embedding width {}, bottom "
                       "MLP {}, {} cross layers of rank {}, top MLP {}, 26 tables of at "
                       "most {} rows)",
                       member_.embedding_dim, fmt::join(member_.bottom_mlp, "-"),
                       member_.cross_layers, member_.low_rank, fmt::join(member_.top_mlp, "-"),
                       *std::max_element(member_.table_rows.begin(), member_.table_rows.end())),
       .generated = fmt::format(
           "{} days of generated click logs in the reference's day-file layout ({} training "
           "samples), with a planted signal in two dense and seven categorical features; the "
           "evaluation set is the {} generated validation samples tiled to the reference's {} "
           "(each stands for {} or {} copies; the AUC is exact over all {})",
           generated_.days, plan.train_samples, Distinct(), plan.eval_samples,
           plan.eval_samples / Distinct(), plan.eval_samples / Distinct() + 1, plan.eval_samples),
       .rules_detail = fmt::format("epoch_num as a fraction of the epoch, target AUC {}",
                                   plan.target.Describe()),
       .real_data = fmt::format("the Criteo 1TB click logs with the reference's synthetic "
                                "multi-hot expansion ({} training / {} validation samples)",
                                plan.train_samples, plan.eval_samples),
       .recipe = fmt::format(
           "Recipe: Adagrad (learning rate {}, epsilon {}, no decay, warm-up or weight decay; "
           "the embedding tables\nstepped in the backward pass on the rows a batch touched), "
           "global batch {} ({} per process, {} processes);\nevaluations every {} samples "
           "(a twentieth of the epoch) over the whole validation set. Every run logs its own "
           "seed.",
           recipe_.base_lr, recipe_.epsilon, plan.global_batch_size, plan.batch_per_rank,
           plan.world_size, plan.schedule.interval_samples)});
}

}  // namespace mlperf::benchmarks::dlrm_dcnv2
