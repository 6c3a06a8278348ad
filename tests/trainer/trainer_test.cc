// The trainer with the toy benchmark's model (tests/toy_benchmark): gradient
// accumulation equal to the whole batch, checkpoints that resume bit for
// bit (optimizer state per parameter), bucket plans around sharded
// parameters, and an optimizer that clips by the global norm refused for
// sharded parameters on several ranks.
#include "reference/trainer/trainer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/dist/communicator.h"
#include "reference/io/safetensors.h"
#include "reference/optim/adam.h"
#include "tests/toy_benchmark/toy.h"

namespace mlperf::train {
namespace {

namespace fs = std::filesystem;

// Two micro-batches of 8 accumulated give the step of one batch of 16 (the
// model has no batch statistics, so the gradients are the same mean).
TEST(Trainer, GradientAccumulationEqualsTheWholeBatch) {
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  std::unique_ptr<models::Model> whole = toy::MakeToyModel({}, 16, 3);
  std::unique_ptr<models::Model> half = toy::MakeToyModel({}, 8, 3);
  Trainer one(*whole, toy::ToyOptimizer(*whole), toy::ToySchedule(10), {}, *comm);
  Trainer two(*half, toy::ToyOptimizer(*half), toy::ToySchedule(10),
              {.gradient_accumulation_steps = 2}, *comm);
  std::unique_ptr<benchmarks::DataPipeline> data = toy::ToyPipeline(false, 0, 64, 16, 0, 1);
  std::unique_ptr<benchmarks::DataPipeline> data_half = toy::ToyPipeline(false, 0, 64, 8, 0, 1);
  const std::vector<float> start = whole->ParametersToHost();
  for (int step = 0; step < 3; ++step) {
    models::Batch batch, first, second;
    ASSERT_TRUE(*data->Next(&batch));
    models::OwnedBatch held_first, held_second;
    ASSERT_TRUE(*data_half->Next(&first));
    first = models::CopyBatch(first, held_first);
    ASSERT_TRUE(*data_half->Next(&second));
    second = models::CopyBatch(second, held_second);
    const float loss_one = one.TrainStep(batch);
    const std::vector<models::Batch> micro = {first, second};
    const float loss_two = two.TrainStep(micro);
    EXPECT_NEAR(loss_one, loss_two, 1e-5);
  }
  const std::vector<float> a = whole->ParametersToHost(), b = half->ParametersToHost();
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, moved = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(double{a[i]} - b[i]));
    moved = std::max(moved, std::abs(double{a[i]} - start[i]));
  }
  EXPECT_LT(worst, 1e-5);
  EXPECT_GT(moved, 1e-3);
}

// A checkpoint holds weights, optimizer state and step: training on from a
// loaded one is bitwise the training that never stopped.
TEST(Trainer, CheckpointResumesBitwise) {
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  std::unique_ptr<models::Model> model = toy::MakeToyModel({}, 16, 5);
  // The same frozen features (a run's starting point, not the trainer's),
  // other trainable weights until the checkpoint is loaded.
  std::unique_ptr<models::Model> resumed = toy::MakeToyModel({}, 16, 5);
  std::vector<float> other = resumed->ParametersToHost();
  for (float& w : other) w += 0.25f;
  resumed->ParametersFromHost(other);
  Trainer trainer(*model, toy::ToyOptimizer(*model), toy::ToySchedule(10), {}, *comm);
  Trainer resumed_trainer(*resumed, toy::ToyOptimizer(*resumed), toy::ToySchedule(10), {}, *comm);
  std::unique_ptr<benchmarks::DataPipeline> data = toy::ToyPipeline(false, 0, 64, 16, 0, 1);
  models::Batch batch;
  for (int step = 0; step < 2; ++step) {
    ASSERT_TRUE(*data->Next(&batch));
    trainer.TrainStep(batch);
  }
  const fs::path path =
      fs::temp_directory_path() / fmt::format("toy_ckpt_{}.safetensors", getpid());
  ASSERT_TRUE(trainer.SaveCheckpoint(path.string()).ok());
  // Per parameter, by name; the frozen one is not the trainer's.
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(path.string());
  ASSERT_TRUE(file.ok()) << file.status();
  for (const char* name : {"head.weight", "table.weight", "trainer.exp_avg.table.weight",
                           "trainer.exp_avg_sq.head.bias", "trainer.adam_step", "trainer.step"})
    EXPECT_TRUE(file->tensors().contains(name)) << name;
  EXPECT_FALSE(file->tensors().contains("features.weight"));
  ASSERT_TRUE(resumed_trainer.LoadCheckpoint(path.string()).ok());
  EXPECT_EQ(resumed_trainer.step(), 2);
  const auto trainable = [](const models::Model& m) {
    std::vector<float> values;
    const std::vector<float> all = m.ParametersToHost();
    for (const TensorSlice& s : m.slices())
      values.insert(values.end(), all.begin() + s.offset, all.begin() + s.offset + s.numel);
    return values;
  };
  EXPECT_EQ(trainable(*resumed), trainable(*model));
  ASSERT_TRUE(*data->Next(&batch));
  models::OwnedBatch held;
  const models::Batch same = models::CopyBatch(batch, held);
  trainer.TrainStep(same);
  resumed_trainer.TrainStep(same);
  EXPECT_EQ(trainable(*resumed), trainable(*model));
  EXPECT_EQ(resumed_trainer.OptimizerStateToHost("exp_avg"),
            trainer.OptimizerStateToHost("exp_avg"));
  // A missing file is an error that names it, and changes nothing.
  const absl::Status missing = resumed_trainer.LoadCheckpoint(path.string() + ".missing");
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find(".missing"), std::string::npos) << missing;
  EXPECT_EQ(resumed_trainer.step(), 3);
  fs::remove(path);
}

// The toy's AdamW under its cosine schedule against torch.optim.AdamW on the
// gradients the trainer produced (tests/trainer/adamw_torch.py, fp64): the
// same weights after six steps, the bias and the sharded table undecayed.
TEST(Trainer, AdamWMatchesTorch) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3";
  std::unique_ptr<dist::Communicator> comm = dist::MakeSingleProcessCommunicator();
  std::unique_ptr<models::Model> model = toy::MakeToyModel({}, 16, 8);
  constexpr int kSteps = 6;
  Trainer trainer(*model, toy::ToyOptimizer(*model), toy::ToySchedule(kSteps), {}, *comm);
  std::unique_ptr<benchmarks::DataPipeline> data = toy::ToyPipeline(false, 0, 64, 16, 0, 1);
  const std::vector<const layers::Parameter*> params = model->trainable_parameters();
  const std::vector<TensorSlice> slices = model->slices();
  std::vector<std::vector<float>> flats = {model->ParametersToHost()};
  io::Metadata meta = {{"beta1", "0.9"},
                       {"beta2", "0.95"},
                       {"epsilon", "1e-08"},
                       {"weight_decay", "0.01"},
                       {"steps", std::to_string(kSteps)}};
  std::string no_decay;
  for (size_t i = 0; i < params.size(); ++i)
    if (slices[i].no_weight_decay) no_decay += (no_decay.empty() ? "" : ",") + params[i]->name;
  meta["no_decay"] = no_decay;
  for (int step = 0; step < kSteps; ++step) {
    meta[fmt::format("lr{}", step)] = fmt::format("{:.17g}", trainer.learning_rate());
    models::Batch batch;
    ASSERT_TRUE(*data->Next(&batch));
    trainer.TrainStep(batch);
    flats.push_back(model->GradientsToHost());
  }
  std::vector<std::string> names;
  names.reserve(params.size() * (kSteps + 1));
  std::vector<io::NamedTensor> tensors;
  for (int k = 0; k <= kSteps; ++k)
    for (size_t i = 0; i < params.size(); ++i) {
      names.push_back((k == 0 ? std::string("w0/") : fmt::format("g{}/", k - 1)) + params[i]->name);
      tensors.push_back({names.back(), core::Tensor(flats[k].data() + slices[i].offset,
                                                    params[i]->value.shape(), core::DType::kF32)});
    }
  const fs::path in = fs::temp_directory_path() / fmt::format("adamw_in_{}.st", getpid());
  const fs::path out = fs::temp_directory_path() / fmt::format("adamw_out_{}.st", getpid());
  ASSERT_TRUE(io::SaveSafetensors(in.string(), tensors, meta).ok());
  const std::string cmd = fmt::format("/usr/bin/python3 {}/tests/trainer/adamw_torch.py {} {}",
                                      MLPERF_SOURCE_DIR, in.string(), out.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out.string());
  ASSERT_TRUE(file.ok()) << file.status();
  fs::remove(in);
  fs::remove(out);
  const std::vector<float> ours = model->ParametersToHost();
  double moved = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<float> want(static_cast<size_t>(slices[i].numel));
    ASSERT_TRUE(file->CopyTo("w/" + params[i]->name,
                             core::Tensor(want.data(), params[i]->value.shape(), core::DType::kF32))
                    .ok());
    for (int64_t j = 0; j < slices[i].numel; ++j) {
      EXPECT_NEAR(ours[slices[i].offset + j], want[j], 2e-6) << params[i]->name << " " << j;
      moved = std::max(moved, std::abs(double{want[j]} - flats[0][slices[i].offset + j]));
    }
  }
  EXPECT_GT(moved, 1e-3);  // the steps did change the weights
}

// AdamW with the LLMs' recipe (betas 0.9/0.95, epsilon 1e-5, decay 0.1,
// global-norm clipping at 1.0) stepped on gradients whose norm is above and
// then below the clip, against torch.optim.AdamW after clip_grad_norm_
// (tests/trainer/adamw_torch.py, fp64); a bias undecayed.
TEST(AdamW, GlobalNormClippingMatchesTorch) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3";
  const std::vector<std::string> names = {"weight", "bias"};
  const std::vector<TensorSlice> slices = {{.offset = 0, .numel = 12},
                                           {.offset = 12, .numel = 3, .no_weight_decay = true}};
  const int64_t n = 15;
  optim::Adam adam({.beta1 = 0.9f,
                    .beta2 = 0.95f,
                    .epsilon = 1e-5f,
                    .weight_decay = 0.1f,
                    .max_grad_norm = 1.0f},
                   slices);
  EXPECT_TRUE(adam.ReadsGlobalGradientNorm());
  core::Arena measuring = core::Arena::Measuring(core::Device::kCpu);
  adam.Allocate(measuring, n);
  core::Arena arena(core::Device::kCpu, measuring.used());
  adam.Allocate(arena, n);
  std::vector<float> w(n);
  for (int64_t i = 0; i < n; ++i) w[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
  constexpr int kSteps = 5;
  std::vector<std::vector<float>> flats = {w};
  io::Metadata meta = {{"beta1", "0.9"},
                       {"beta2", "0.95"},
                       {"epsilon", "1e-05"},
                       {"weight_decay", "0.1"},
                       {"steps", std::to_string(kSteps)},
                       {"no_decay", "bias"},
                       {"max_grad_norm", "1.0"}};
  for (int k = 0; k < kSteps; ++k) {
    // Norms about 8, 4, 2, 1 and 0.5: clipped, then not.
    std::vector<float> g(n);
    for (int64_t i = 0; i < n; ++i)
      g[i] = static_cast<float>(((i * 7 + k * 3) % 11) - 5) * 0.55f / static_cast<float>(1 << k);
    meta[fmt::format("lr{}", k)] = "0.01";
    flats.push_back(g);
    adam.Step({.w = w.data(), .g = g.data(), .count = n, .lr = 0.01f});
  }
  std::vector<io::NamedTensor> tensors;
  std::vector<std::string> keys;
  keys.reserve(2 * (kSteps + 1));
  for (int k = 0; k <= kSteps; ++k)
    for (size_t i = 0; i < names.size(); ++i) {
      keys.push_back((k == 0 ? std::string("w0/") : fmt::format("g{}/", k - 1)) + names[i]);
      tensors.push_back({keys.back(), core::Tensor(flats[k].data() + slices[i].offset,
                                                   {slices[i].numel}, core::DType::kF32)});
    }
  const fs::path in = fs::temp_directory_path() / fmt::format("adamw_clip_in_{}.st", getpid());
  const fs::path out = fs::temp_directory_path() / fmt::format("adamw_clip_out_{}.st", getpid());
  ASSERT_TRUE(io::SaveSafetensors(in.string(), tensors, meta).ok());
  const std::string cmd = fmt::format("/usr/bin/python3 {}/tests/trainer/adamw_torch.py {} {}",
                                      MLPERF_SOURCE_DIR, in.string(), out.string());
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out.string());
  ASSERT_TRUE(file.ok()) << file.status();
  fs::remove(in);
  fs::remove(out);
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<float> want(static_cast<size_t>(slices[i].numel));
    ASSERT_TRUE(file->CopyTo("w/" + names[i],
                             core::Tensor(want.data(), {slices[i].numel}, core::DType::kF32))
                    .ok());
    for (int64_t j = 0; j < slices[i].numel; ++j)
      EXPECT_NEAR(w[slices[i].offset + j], want[j], 2e-6) << names[i] << " " << j;
  }
  // The clip mattered: the same steps unclipped end elsewhere.
  optim::Adam unclipped({.beta1 = 0.9f, .beta2 = 0.95f, .epsilon = 1e-5f, .weight_decay = 0.1f},
                        slices);
  EXPECT_FALSE(unclipped.ReadsGlobalGradientNorm());
  core::Arena other(core::Device::kCpu, measuring.used());
  unclipped.Allocate(other, n);
  std::vector<float> w2 = flats[0];
  for (int k = 1; k <= kSteps; ++k)
    unclipped.Step({.w = w2.data(), .g = flats[k].data(), .count = n, .lr = 0.01f});
  double apart = 0.0;
  for (int64_t i = 0; i < n; ++i) apart = std::max(apart, std::fabs(double{w2[i]} - w[i]));
  EXPECT_GT(apart, 1e-4);
}

TEST(Buckets, NeverSpanASkippedRange) {
  // Replicated ranges around a sharded tensor at [100, 140).
  const dist::Bucket ranges[] = {{0, 100}, {140, 300}};
  const std::vector<dist::Bucket> buckets = dist::PlanBuckets(ranges, 64);
  const std::vector<std::pair<int64_t, int64_t>> want = {
      {236, 300}, {172, 236}, {140, 172}, {36, 100}, {0, 36}};
  ASSERT_EQ(buckets.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(buckets[i].begin, want[i].first) << i;
    EXPECT_EQ(buckets[i].end, want[i].second) << i;
  }
  // One range is the plan over the whole arena.
  const dist::Bucket all = {0, 300};
  const std::vector<dist::Bucket> a = dist::PlanBuckets(std::span(&all, 1), 64),
                                  b = dist::PlanBuckets(300, 64);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].begin, b[i].begin);
}

}  // namespace
}  // namespace mlperf::train
