#include "tests/toy_benchmark/toy.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "base/check.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/layers/linear.h"
#include "reference/optim/adam.h"

namespace mlperf::toy {

int g_threads_when_preparing = 0;
int ThreadsWhenPreparing() { return g_threads_when_preparing; }

void Sample(uint64_t id, float* x, int32_t* category, int32_t* label) {
  const int32_t c = static_cast<int32_t>(core::PhiloxBits(7, 0, id) % kClasses);
  for (int64_t f = 0; f < kFeatures; ++f) {
    const float centre = ((c >> (f % 2)) & 1) == (f / 2) % 2 ? 1.0f : -1.0f;
    x[f] = centre + 2.0f * (core::PhiloxUniform(7, 1 + f, id) - 0.5f);
  }
  *category = c + kClasses * static_cast<int32_t>(core::PhiloxBits(7, 20, id) % 2);
  *label = c;
}

namespace {

// Inputs: features [n, kFeatures], category [n], label [n].
class ToyModel final : public models::Model {
 public:
  ToyModel(const models::Placement& placement, int64_t batch)
      : Model(placement.device, batch), placement_(placement) {
    MLPERF_CHECK_MSG(placement.device == core::Device::kCpu, "the toy runs on the CPU");
    MLPERF_CHECK(kCategories % placement.world_size == 0);
    rows_ = kCategories / placement.world_size;
    first_row_ = rows_ * placement.rank;
    AllocateArenas([&](const layers::ModelArenas& a) {
      features_ = layers::AddParameter(
          a, &registry_, {kHidden, kFeatures},
          {.name = "features.weight", .trainable = false, .dtype = core::DType::kBF16});
      head_.Allocate(batch, kHidden, kClasses, layers::Activation::kNone, "head", a, &registry_);
      table_ =
          layers::AddParameter(a, &registry_, {rows_, kClasses},
                               {.name = "table.weight",
                                .no_weight_decay = true,
                                .sharding = {.full_rows = kCategories, .first_row = first_row_}});
      x_ = a.activations->Allocate({batch, kFeatures});
      categories_ = a.activations->Allocate({batch}, core::DType::kI32);
      labels_ = a.activations->Allocate({batch}, core::DType::kI32);
      features_f32_ = a.activations->Allocate({kHidden, kFeatures});
      hidden_ = a.activations->Allocate({batch, kHidden});
      logits_ = a.activations->Allocate({batch, kClasses});
      dlogits_ = a.activations->Allocate({batch, kClasses});
      loss_ = a.activations->Allocate({1});
    });
    full_table_.assign(kCategories * kClasses, 0.0f);
  }

  void Initialize(uint64_t seed) override {
    // Every value a function of its index: the same weights on any number
    // of ranks.
    std::vector<float> features(kHidden * kFeatures), full(kCategories * kClasses);
    core::FillNormal(core::Tensor(features.data(), {kHidden, kFeatures}, core::DType::kF32), 0.0f,
                     0.5f, {seed, 0});
    core::FillNormal(core::Tensor(full.data(), {kCategories, kClasses}, core::DType::kF32), 0.0f,
                     0.1f, {seed, 1});
    SetParameter(features_, features);
    SetParameter(table_, std::span(full).subspan(first_row_ * kClasses, rows_ * kClasses));
    std::vector<float> head(kClasses * kHidden);
    core::FillNormal(core::Tensor(head.data(), {kClasses, kHidden}, core::DType::kF32), 0.0f, 0.3f,
                     {seed, 2});
    SetParameter(registry_.parameters[1], head);
    SetParameter(registry_.parameters[2], std::vector<float>(kClasses, 0.0f));
  }

  // Collective: the table's rows from every rank, for the passes that follow.
  void GatherTable() {
    std::fill(full_table_.begin(), full_table_.end(), 0.0f);
    std::memcpy(full_table_.data() + first_row_ * kClasses, table_.value.data(),
                table_.value.bytes());
    if (placement_.world_size > 1)
      placement_.comm->AllReduceSum(full_table_.data(), kCategories * kClasses);
  }

  void ForwardTrainAsync(const models::Batch& b) override {
    GatherTable();  // the last step changed every shard
    Logits(b);
    ops::SoftmaxCrossEntropy(0.0f, static_cast<float>(batch_size()), logits_, labels_, loss_,
                             dlogits_);
  }

  void Backward() override {
    ScaleLossGradient(dlogits_);
    // The table's gradient: each sample's row, summed over the ranks and
    // averaged as the trainer averages the replicated gradients; this rank
    // keeps its rows.
    std::vector<float> full(kCategories * kClasses, 0.0f);
    const int32_t* cat = categories_.as<int32_t>();
    for (int64_t i = 0; i < batch_size(); ++i)
      for (int64_t c = 0; c < kClasses; ++c)
        full[cat[i] * kClasses + c] += dlogits_.f32()[i * kClasses + c];
    if (placement_.world_size > 1)
      placement_.comm->AllReduceSum(full.data(), kCategories * kClasses);
    float* grad = table_.grad.f32();
    for (int64_t j = 0; j < rows_ * kClasses; ++j)
      grad[j] = full[first_row_ * kClasses + j] / static_cast<float>(placement_.world_size);
    head_.Backward(hidden_, dlogits_, core::Tensor());
    NotifyGradientsReady(0);
  }

  models::MetricSums EvaluateBatch(const models::Batch& b) override {
    Logits(b);
    double correct = 0;
    const float* z = logits_.f32();
    for (int64_t i = 0; i < b.count; ++i)
      correct += std::max_element(z + i * kClasses, z + (i + 1) * kClasses) - (z + i * kClasses) ==
                 labels_.as<int32_t>()[i];
    return {correct, static_cast<double>(b.count)};
  }

  // -log p(label) of each real sample, under the table gathered last.
  std::vector<float> SampleLosses(const models::Batch& b) {
    Logits(b);
    std::vector<float> losses;
    for (int64_t i = 0; i < b.count; ++i) {
      const float* z = logits_.f32() + i * kClasses;
      const float top = *std::max_element(z, z + kClasses);
      double sum = 0;
      for (int64_t c = 0; c < kClasses; ++c) sum += std::exp(static_cast<double>(z[c] - top));
      losses.push_back(static_cast<float>(std::log(sum) - (z[labels_.as<int32_t>()[i]] - top)));
    }
    return losses;
  }

  models::OwnedBatch SyntheticBatch() const override {
    models::OwnedBatch owned;
    const core::Tensor x = owned.Add({batch_size(), kFeatures}, core::DType::kF32);
    const core::Tensor cat = owned.Add({batch_size()}, core::DType::kI32);
    const core::Tensor y = owned.Add({batch_size()}, core::DType::kI32);
    for (int64_t i = 0; i < batch_size(); ++i)
      Sample(1000000 + i, x.f32() + i * kFeatures, cat.as<int32_t>() + i, y.as<int32_t>() + i);
    owned.batch.count = batch_size();
    return owned;
  }

 private:
  // The frozen random features, the head and each sample's table row.
  void Logits(const models::Batch& b) {
    for (size_t k = 0; k < 3; ++k) {
      const core::Tensor& to = k == 0 ? x_ : (k == 1 ? categories_ : labels_);
      std::memcpy(to.data(), b.inputs[k].data(), b.inputs[k].bytes());
    }
    ops::Cast(features_.value, features_f32_);
    ops::LinearForward(x_, features_f32_, core::Tensor(), hidden_);
    ops::ReluForward(hidden_, hidden_);
    head_.Forward(hidden_);
    const float* head = head_.output().f32();
    const int32_t* cat = categories_.as<int32_t>();
    for (int64_t i = 0; i < batch_size(); ++i)
      for (int64_t c = 0; c < kClasses; ++c)
        logits_.f32()[i * kClasses + c] =
            head[i * kClasses + c] + full_table_[cat[i] * kClasses + c];
  }

  models::Placement placement_;
  int64_t rows_ = 0, first_row_ = 0;
  layers::Parameter features_, table_;
  layers::Linear head_;
  core::Tensor x_, categories_, labels_, features_f32_, hidden_, logits_, dlogits_;
  std::vector<float> full_table_;
};

// The mean log loss over the evaluation set: every sample's, gathered in
// sample order from the ranks' contiguous shares.
class LogLossEvaluator final : public eval::Evaluator {
 public:
  explicit LogLossEvaluator(ToyModel& model) : model_(model) {}
  void Start() override {
    model_.GatherTable();
    losses_.clear();
  }
  void Add(const models::Batch& batch) override {
    const std::vector<float> l = model_.SampleLosses(batch);
    losses_.insert(losses_.end(), l.begin(), l.end());
  }
  double Finish(dist::Communicator& comm) override {
    const std::vector<float> all = eval::GatherRecords(comm, losses_, 1);
    double sum = 0;
    for (float l : all) sum += l;
    return all.empty() ? 0.0 : sum / static_cast<double>(all.size());
  }

 private:
  ToyModel& model_;
  std::vector<float> losses_;
};

class Pipeline final : public benchmarks::DataPipeline {
 public:
  Pipeline(bool eval, uint64_t first, int64_t size, int64_t batch, int rank, int world)
      : eval_(eval),
        first_(first),
        size_(size),
        batch_(batch),
        rank_(rank),
        world_(world),
        x_(batch * kFeatures),
        cat_(batch),
        y_(batch) {}
  int64_t size() const override { return size_; }
  void StartEval() override { next_ = size_ * rank_ / world_; }
  absl::StatusOr<bool> Next(models::Batch* b) override {
    int64_t n = 0;
    if (eval_) {
      const int64_t end = size_ * (rank_ + 1) / world_;
      if (next_ >= end) return false;
      for (; n < batch_ && next_ < end; ++n, ++next_)
        Sample(first_ + next_, &x_[n * kFeatures], &cat_[n], &y_[n]);
      for (int64_t pad = n; pad < batch_; ++pad)  // padding: a copy of the first
        Sample(first_, &x_[pad * kFeatures], &cat_[pad], &y_[pad]);
    } else {
      // Global batch `step_` split among the ranks: the same samples on any
      // number of them.
      for (; n < batch_; ++n) {
        const int64_t i = (step_ * batch_ * world_ + rank_ * batch_ + n) % size_;
        Sample(first_ + i, &x_[n * kFeatures], &cat_[n], &y_[n]);
      }
      ++step_;
    }
    b->count = n;
    b->inputs = {core::Tensor(x_.data(), {batch_, kFeatures}, core::DType::kF32),
                 core::Tensor(cat_.data(), {batch_}, core::DType::kI32),
                 core::Tensor(y_.data(), {batch_}, core::DType::kI32)};
    return true;
  }

 private:
  bool eval_;
  uint64_t first_;
  int64_t size_, batch_;
  int rank_, world_;
  int64_t next_ = 0, step_ = 0;
  std::vector<float> x_;
  std::vector<int32_t> cat_, y_;
};

constexpr double kBaseLr = 0.01, kWeightDecay = 0.01;

class ToySetup final : public benchmarks::BenchmarkSetup {
 public:
  explicit ToySetup(benchmarks::RunPlan plan) { plan_ = std::move(plan); }
  std::vector<benchmarks::Hyperparameter> Hyperparameters() const override {
    return {{"global_batch_size", plan_.global_batch_size},
            {"opt_name", "adamw"},
            {"opt_base_learning_rate", kBaseLr},
            {"opt_adamw_weight_decay", kWeightDecay},
            {"train_samples", plan_.train_samples},
            {"eval_samples", plan_.eval_samples}};
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override {
    return MakeToyModel(placement, plan_.batch_per_rank, seed);
  }
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override {
    return ToyOptimizer(model);
  }
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override {
    return ToySchedule(plan_.schedule.steps_per_epoch * plan_.schedule.last_epoch);
  }
  std::unique_ptr<eval::Evaluator> MakeEvaluator(models::Model& model) const override {
    return std::make_unique<LogLossEvaluator>(static_cast<ToyModel&>(model));
  }
  absl::Status PrepareData() const override {
    g_threads_when_preparing = omp_get_max_threads();
    return absl::OkStatus();
  }
  absl::Status CheckData() const override { return absl::OkStatus(); }
  absl::StatusOr<std::unique_ptr<benchmarks::DataPipeline>> OpenData(benchmarks::Split split,
                                                                     uint64_t,
                                                                     int rank) const override {
    const bool eval = split == benchmarks::Split::kEval;
    return ToyPipeline(eval, eval ? 100000 : 0, eval ? plan_.eval_samples : plan_.train_samples,
                       plan_.batch_per_rank, rank, plan_.world_size);
  }
  std::string ReadmeSection() const override { return "# toy\n\n"; }
};

class ToyBenchmark final : public benchmarks::Benchmark {
 public:
  const benchmarks::BenchmarkInfo& info() const override {
    static const benchmarks::BenchmarkInfo info = {
        .name = "toy",
        .summary = "a toy: Gaussian clusters with a telling category",
        .metric = "log loss",
        .own_rules = benchmarks::BenchmarkInfo::OwnRules{
            .ruleset = "6.0.0", .target = "v <= 0.3 and v > 0.0", .required_runs = 2}};
    return info;
  }

 protected:
  absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> ConfigureFor(
      benchmarks::RunPlan plan, int world_size,
      const benchmarks::ProcessShare& share) const override {
    plan.global_batch_size = 32;
    plan.train_samples = 512;
    plan.eval_samples = 200;
    plan.system_name = "toy-demo";
    plan.data_name = plan.model_name = plan.member_name = "toy";
    if (absl::Status s =
            benchmarks::CompletePlan(plan.options, world_size, share.cores, "toy", plan);
        !s.ok())
      return s;
    plan.schedule = {.steps_per_epoch = plan.train_samples / plan.global_batch_size,
                     .first_eval_epoch = 1,
                     .eval_every_epochs = 1,
                     .last_epoch = 8,
                     .log_samples = true,
                     .samples_per_epoch = plan.train_samples};
    return std::make_unique<ToySetup>(std::move(plan));
  }
};

}  // namespace

std::unique_ptr<models::Model> MakeToyModel(const models::Placement& placement, int64_t batch,
                                            uint64_t seed) {
  auto model = std::make_unique<ToyModel>(placement, batch);
  model->Initialize(seed);
  return model;
}

std::unique_ptr<optim::Optimizer> ToyOptimizer(const models::Model& model) {
  return std::make_unique<optim::Adam>(
      optim::AdamOptions{.beta1 = 0.9f,
                         .beta2 = 0.95f,
                         .epsilon = 1e-8f,
                         .weight_decay = static_cast<float>(kWeightDecay),
                         .decoupled = true},
      model.slices());
}

std::unique_ptr<optim::LearningRateSchedule> ToySchedule(int64_t total_steps) {
  return std::make_unique<optim::CosineWithWarmup>(optim::CosineWithWarmupParams{
      .max_lr = kBaseLr, .min_lr = kBaseLr / 10, .warmup_steps = 4, .decay_steps = total_steps});
}

std::unique_ptr<benchmarks::DataPipeline> ToyPipeline(bool eval, uint64_t first, int64_t size,
                                                      int64_t batch, int rank, int world) {
  return std::make_unique<Pipeline>(eval, first, size, batch, rank, world);
}

std::unique_ptr<benchmarks::Benchmark> MakeToyBenchmark() {
  return std::make_unique<ToyBenchmark>();
}

}  // namespace mlperf::toy
