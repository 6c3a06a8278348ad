// The seam, tested from outside: a toy benchmark (a two-layer classifier on
// generated Gaussian clusters) is registered through the registry alone, and
// the unchanged RunBenchmark loop trains it to its target and writes complete
// MLLOG logs in the closed order, with epoch numbers counted in samples.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/exit_codes.h"
#include "closed_division/registry.h"
#include "closed_division/run_benchmark.h"
#include "fmt/format.h"
#include "logging/mllog_parser.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/layers/linear.h"

namespace mlperf::closed {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kFeatures = 8, kHidden = 16, kClasses = 4;

// A sample of class c: the class's centre (a fixed vertex) plus noise.
void Sample(uint64_t id, float* x, int32_t* label) {
  const int32_t c = static_cast<int32_t>(core::PhiloxBits(7, 0, id) % kClasses);
  for (int64_t f = 0; f < kFeatures; ++f) {
    const float centre = ((c >> (f % 2)) & 1) == (f / 2) % 2 ? 1.5f : -1.5f;
    x[f] = centre + core::PhiloxUniform(7, 1 + f, id) - 0.5f;
  }
  *label = c;
}

class ToyModel final : public models::Model {
 public:
  explicit ToyModel(int64_t batch) : Model(core::Device::kCpu, batch) {
    AllocateArenas([&](const layers::ModelArenas& a) {
      hidden_.Allocate(batch, kFeatures, kHidden, layers::Activation::kRelu, "hidden", a,
                       &registry_);
      out_.Allocate(batch, kHidden, kClasses, layers::Activation::kNone, "out", a, &registry_);
      x_ = a.activations->Allocate({batch, kFeatures});
      labels_ = a.activations->Allocate({batch}, core::DType::kI32);
      dlogits_ = a.activations->Allocate({batch, kClasses});
      dhidden_ = a.activations->Allocate({batch, kHidden});
      loss_ = a.activations->Allocate({1});
    });
  }
  void Initialize(uint64_t seed) override {
    std::vector<float> params(parameters().size(), 0.0f);
    for (size_t i = 0; i < registry_.parameters.size(); ++i) {
      const layers::Parameter& p = registry_.parameters[i];
      if (!p.bias) core::FillNormal(HostParameter(p.value, params), 0.0f, 0.3f, {seed, i});
    }
    ParametersFromHost(params);
  }
  void ForwardTrainAsync(const models::Batch& b) override {
    if (!b.inputs.empty()) Upload(b);
    hidden_.Forward(x_);
    out_.Forward(hidden_.output());
    ops::SoftmaxCrossEntropy(0.0f, static_cast<float>(batch_size()), out_.output(), labels_, loss_,
                             dlogits_);
  }
  void Backward() override {
    out_.Backward(hidden_.output(), dlogits_, dhidden_);
    NotifyGradientsReady(GradientOffset(2));
    hidden_.Backward(x_, dhidden_, core::Tensor());
    NotifyGradientsReady(0);
  }
  models::MetricSums EvaluateBatch(const models::Batch& b) override {
    Upload(b);
    hidden_.Forward(x_);
    out_.Forward(hidden_.output());
    const float* z = out_.output().f32();
    const int32_t* y = static_cast<const int32_t*>(b.inputs[1].data());
    double correct = 0;
    for (int64_t i = 0; i < b.count; ++i)
      correct +=
          std::max_element(z + i * kClasses, z + (i + 1) * kClasses) - (z + i * kClasses) == y[i];
    return {correct, static_cast<double>(b.count)};
  }
  models::OwnedBatch SyntheticBatch() const override {
    models::OwnedBatch owned;
    const core::Tensor x = owned.Add({batch_size(), kFeatures}, core::DType::kF32);
    const core::Tensor y = owned.Add({batch_size()}, core::DType::kI32);
    for (int64_t i = 0; i < batch_size(); ++i)
      Sample(1000000 + i, x.f32() + i * kFeatures, static_cast<int32_t*>(y.data()) + i);
    owned.batch.count = batch_size();
    return owned;
  }

 private:
  void Upload(const models::Batch& b) {
    std::memcpy(x_.data(), b.inputs[0].data(), b.inputs[0].bytes());
    std::memcpy(labels_.data(), b.inputs[1].data(), b.inputs[1].bytes());
  }
  layers::Linear hidden_, out_;
  core::Tensor x_, labels_, dlogits_, dhidden_;
};

// Samples [first, first + size): training batches cycle through them, an
// evaluation pass walks them once with a padded last batch.
class ToyPipeline final : public DataPipeline {
 public:
  ToyPipeline(uint64_t first, int64_t size, int64_t batch)
      : first_(first), size_(size), x_(batch * kFeatures), y_(batch) {}
  int64_t size() const override { return size_; }
  void StartEval() override { next_ = 0; }
  absl::StatusOr<bool> Next(models::Batch* b) override {
    const int64_t batch = static_cast<int64_t>(y_.size());
    if (eval_ && next_ >= size_) return false;
    int64_t n = 0;
    for (; n < batch && (!eval_ || next_ < size_); ++n, ++next_)
      Sample(first_ + static_cast<uint64_t>(next_ % size_), &x_[n * kFeatures], &y_[n]);
    b->count = n;
    b->inputs = {core::Tensor(x_.data(), {batch, kFeatures}, core::DType::kF32),
                 core::Tensor(y_.data(), {batch}, core::DType::kI32)};
    return true;
  }
  bool eval_ = false;

 private:
  uint64_t first_;
  int64_t size_, next_ = 0;
  std::vector<float> x_;
  std::vector<int32_t> y_;
};

class ToySetup final : public BenchmarkSetup {
 public:
  explicit ToySetup(RunPlan plan) { plan_ = std::move(plan); }
  std::vector<Hyperparameter> Hyperparameters() const override {
    return {{"global_batch_size", plan_.global_batch_size},
            {"opt_base_learning_rate", 0.5},
            {"train_samples", plan_.train_samples},
            {"eval_samples", plan_.eval_samples}};
  }
  std::unique_ptr<models::Model> MakeModel(core::Device, uint64_t seed) const override {
    auto model = std::make_unique<ToyModel>(plan_.batch_per_rank);
    model->Initialize(seed);
    return model;
  }
  train::TrainerConfig TrainerConfig() const override {
    return {.optimizer = train::OptimizerKind::kSgd,
            .global_batch_size = plan_.global_batch_size,
            .base_lr = 0.5,
            .end_lr = 0.01,
            .warmup_epochs = 0,
            .train_epochs = 8,
            .weight_decay = 0.0,
            .steps_per_epoch = plan_.schedule.steps_per_epoch};
  }
  absl::Status PrepareData() const override { return absl::OkStatus(); }
  absl::Status CheckData() const override { return absl::OkStatus(); }
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t,
                                                         int) const override {
    auto p = std::make_unique<ToyPipeline>(
        split == Split::kTrain ? 0 : 100000,
        split == Split::kTrain ? plan_.train_samples : plan_.eval_samples, plan_.batch_per_rank);
    p->eval_ = split == Split::kEval;
    return p;
  }
  std::string ReadmeSection() const override { return "# toy\n\n"; }
};

class ToyBenchmark final : public Benchmark {
 public:
  const BenchmarkInfo& info() const override { return info_; }
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(
      const RunnerOptions& options, int world_size, const ProcessShare& share) const override {
    RunPlan plan;
    plan.options = options;
    plan.demo = true;
    plan.global_batch_size = 32;
    plan.train_samples = 512;
    plan.eval_samples = 200;
    plan.system_name = "toy-demo";
    plan.data_name = plan.model_name = "toy";
    if (absl::Status s = CompletePlan(options, world_size, share.cores, "toy", plan); !s.ok())
      return s;
    plan.schedule = {.steps_per_epoch = plan.train_samples / plan.global_batch_size,
                     .first_eval_epoch = 1,
                     .eval_every_epochs = 1,
                     .last_epoch = 8,
                     .log_samples = true,
                     .samples_per_epoch = plan.train_samples};
    return std::make_unique<ToySetup>(std::move(plan));
  }

 private:
  BenchmarkInfo info_ = {.name = "toy",
                         .summary = "a toy",
                         .ruleset = "6.1.0",
                         .required_runs = 2,
                         .target = 0.95,
                         .metric = "accuracy"};
};

// Two micro-batches of 8 accumulated give the step of one batch of 16 (the
// model has no batch statistics, so the gradients are the same mean).
TEST(Trainer, GradientAccumulationEqualsTheWholeBatch) {
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  ToyModel whole(16), half(8);
  whole.Initialize(3);
  half.Initialize(3);
  const train::TrainerConfig config = {.optimizer = train::OptimizerKind::kLars,
                                       .global_batch_size = 16,
                                       .base_lr = 1.0,
                                       .warmup_epochs = 0,
                                       .train_epochs = 10,
                                       .steps_per_epoch = 10};
  train::Trainer one(whole, config, *comm);
  train::TrainerConfig accumulated = config;
  accumulated.gradient_accumulation_steps = 2;
  train::Trainer two(half, accumulated, *comm);
  ToyPipeline data(0, 64, 16), data_half(0, 64, 8);
  for (int step = 0; step < 3; ++step) {
    models::Batch batch, first, second;
    ASSERT_TRUE(*data.Next(&batch));
    models::OwnedBatch held_first, held_second;
    ASSERT_TRUE(*data_half.Next(&first));
    first = models::CopyBatch(first, held_first);
    ASSERT_TRUE(*data_half.Next(&second));
    second = models::CopyBatch(second, held_second);
    const float loss_one = one.TrainStep(batch);
    const std::vector<models::Batch> micro = {first, second};
    const float loss_two = two.TrainStep(micro);
    EXPECT_NEAR(loss_one, loss_two, 1e-5);
  }
  const std::vector<float> a = whole.ParametersToHost(), b = half.ParametersToHost();
  ASSERT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(double{a[i]} - b[i]));
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(std::abs(double{a[0]} - double{ToyModel(16).ParametersToHost()[0]}), 0.0);
}

// A checkpoint holds weights, optimizer state and step: training on from a
// loaded one is bitwise the training that never stopped.
TEST(Trainer, CheckpointResumesBitwise) {
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  const train::TrainerConfig config = {.global_batch_size = 16,
                                       .base_lr = 1.0,
                                       .warmup_epochs = 1,
                                       .train_epochs = 10,
                                       .steps_per_epoch = 4};
  ToyModel model(16), resumed(16);
  model.Initialize(5);
  resumed.Initialize(6);  // different until the checkpoint is loaded
  train::Trainer trainer(model, config, *comm), resumed_trainer(resumed, config, *comm);
  ToyPipeline data(0, 64, 16);
  models::Batch batch;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(*data.Next(&batch));
    trainer.TrainStep(batch);
  }
  const fs::path path =
      fs::temp_directory_path() / fmt::format("toy_ckpt_{}.safetensors", getpid());
  ASSERT_TRUE(trainer.SaveCheckpoint(path.string()).ok());
  ASSERT_TRUE(resumed_trainer.LoadCheckpoint(path.string()).ok());
  EXPECT_EQ(resumed_trainer.step(), 2);
  EXPECT_EQ(resumed.ParametersToHost(), model.ParametersToHost());
  ASSERT_TRUE(*data.Next(&batch));
  models::OwnedBatch held;
  const models::Batch same = models::CopyBatch(batch, held);
  trainer.TrainStep(same);
  resumed_trainer.TrainStep(same);
  EXPECT_EQ(resumed.ParametersToHost(), model.ParametersToHost());
  EXPECT_EQ(resumed_trainer.MomentumToHost(), trainer.MomentumToHost());
  // A missing file is an error that names it, and changes nothing.
  const absl::Status missing = resumed_trainer.LoadCheckpoint(path.string() + ".missing");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(".missing"), std::string::npos) << missing;
  EXPECT_EQ(resumed_trainer.step(), 3);
  fs::remove(path);
}

TEST(ToyBenchmark, TrainsThroughTheRegistryAndWritesClosedOrderLogs) {
  BenchmarkRegistry registry;
  registry.Register(std::make_unique<ToyBenchmark>());
  EXPECT_EQ(registry.Names(), "toy");
  const Benchmark* toy = registry.Find("toy");
  ASSERT_NE(toy, nullptr);

  const fs::path out = fs::temp_directory_path() / fmt::format("toy_benchmark_{}", getpid());
  fs::remove_all(out);
  RunnerOptions options;
  options.benchmark = "toy";
  options.out_dir = out.string();
  options.seed = 11;
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  ASSERT_EQ(RunBenchmark(*toy, options, {.control = comm.get()}, {.cores = 1}), kExitOk);

  const fs::path results = out / "mlperf-suite" / "results" / "toy-demo" / "toy";
  EXPECT_TRUE(fs::exists(out / "mlperf-suite" / "systems" / "toy-demo.json"));
  // No --runs: the benchmark's required number, 2.
  EXPECT_FALSE(fs::exists(results / "result_2.txt"));
  for (int run = 0; run < 2; ++run) {
    const fs::path log = results / fmt::format("result_{}.txt", run);
    ASSERT_TRUE(fs::exists(log)) << log;
    absl::StatusOr<mllog::ParsedLog> parsed = mllog::ParseFile(log.string());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    std::vector<std::string> keys;
    std::map<std::string, int> count;
    for (const mllog::LogLine& e : parsed->lines) {
      keys.push_back(e.key);
      ++count[e.key];
    }
    // The closed order: submission keys, init with the seed and every
    // declared hyperparameter once, run_start, blocks and evaluations, run_stop.
    ASSERT_GE(keys.size(), 15u);
    EXPECT_EQ(keys[0], "submission_benchmark");
    EXPECT_EQ(parsed->lines[0].value.as_string(), "toy");
    const auto at = [&](const std::string& k) {
      return std::find(keys.begin(), keys.end(), k) - keys.begin();
    };
    EXPECT_LT(at("submission_platform"), at("init_start"));
    EXPECT_LT(at("init_start"), at("seed"));
    for (const char* k :
         {"global_batch_size", "opt_base_learning_rate", "train_samples", "eval_samples", "seed",
          "init_start", "init_stop", "run_start", "run_stop", "cache_clear"})
      EXPECT_EQ(count[k], 1) << k;
    EXPECT_LT(at("eval_samples"), at("init_stop"));
    EXPECT_LT(at("init_stop"), at("run_start"));
    EXPECT_EQ(keys[at("run_start") + 1], "block_start");
    EXPECT_EQ(keys.back(), "run_stop");
    EXPECT_EQ(count["block_start"], count["block_stop"]);
    EXPECT_EQ(count["eval_start"], count["eval_accuracy"]);
    EXPECT_EQ(parsed->lines.back().metadata.Find("status")->as_string(), "success");
    // Epochs are logged in samples; the last evaluation reached the target.
    const mllog::LogLine* last_eval = nullptr;
    for (const mllog::LogLine& e : parsed->lines)
      if (e.key == "eval_accuracy") last_eval = &e;
    ASSERT_NE(last_eval, nullptr);
    EXPECT_GE(last_eval->value.as_float(), 0.95);
    EXPECT_EQ(last_eval->metadata.Find("epoch_num")->as_int() % 512, 0);
  }
  fs::remove_all(out);
}

}  // namespace
}  // namespace mlperf::closed
