// BERT under the trainer: LAMB after global-norm clipping with the BERT
// schedule (negative start_warmup_step, warm-up end, decay) against a
// PyTorch transcription of the reference formulas (tests/bert/lamb_torch.py)
// on the gradients the trainer produced; the warm-up leaving no trace (LAMB
// moments, its step, the dropout streams); checkpoints holding LAMB's state;
// dropout's backward against finite differences; the small model learning;
// bf16 and fp16 steps close to the fp32 one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/dist/communicator.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/precision.h"
#include "reference/models/bert.h"
#include "reference/trainer/trainer.h"
#include "tests/bert/lamb_trainer.h"
#include "tests/core/test_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

BertConfig Tiny() {
  return {.vocab_size = 53,
          .hidden = 16,
          .layers = 2,
          .heads = 2,
          .intermediate = 32,
          .max_positions = 16,
          .seq_len = 12,
          .max_predictions = 3};
}

// LAMB after clipping at 1.0 (the benchmark's), with betas of our own.
benchmarks::bert::Recipe Lamb() {
  return {.base_lr = 5e-3,
          .train_steps = 6,
          .warmup_steps = 3,
          .start_warmup_step = -1,
          .beta1 = 0.8,
          .beta2 = 0.95,
          .epsilon = 1e-6,
          .weight_decay = 0.01};
}

std::string TempPath(const std::string& stem) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("{}_{}.safetensors", stem, ::getpid()))
      .string();
}

// Host copy of each parameter of a flat host arena, under its name.
std::vector<io::NamedTensor> Named(const Bert& model, std::vector<float>& flat,
                                   const std::string& prefix, std::vector<std::string>& names) {
  std::vector<io::NamedTensor> out;
  const std::vector<TensorSlice> slices = model.slices();
  for (size_t i = 0; i < slices.size(); ++i) {
    names.push_back(prefix + model.parameter_tensors()[i].name);
    out.push_back({names.back(),
                   core::Tensor(flat.data() + slices[i].offset,
                                model.parameter_tensors()[i].value.shape(), core::DType::kF32)});
  }
  return out;
}

TEST(BertTrainerTest, LambWithClippingAndTheBertScheduleMatchesATorchTranscription) {
  if (std::system("/usr/bin/python3 -c 'import torch' > /dev/null 2>&1") != 0)
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3";
  Bert model(Tiny(), 4);
  model.Initialize(5);
  auto comm = dist::MakeSingleProcessCommunicator();
  const benchmarks::bert::Recipe config = Lamb();
  const auto owned = test::LambTrainer(model, config, *comm);
  train::Trainer& trainer = *owned;
  const OwnedBatch batch = model.SyntheticBatch();
  const int steps = 6;  // warm-up from step -1 (lr > 0 at once), its end, decay to the last step
  std::vector<std::vector<float>> flats = {model.ParametersToHost()};
  for (int s = 0; s < steps; ++s) {
    trainer.TrainStep(batch.batch);
    flats.push_back(model.GradientsToHost());
  }
  std::vector<std::string> names;
  names.reserve(8 * model.parameter_tensors().size());
  std::vector<io::NamedTensor> tensors = Named(model, flats[0], "w0/", names);
  for (int s = 0; s < steps; ++s) {
    const std::vector<io::NamedTensor> g =
        Named(model, flats[s + 1], fmt::format("g{}/", s), names);
    tensors.insert(tensors.end(), g.begin(), g.end());
  }
  const io::Metadata h = {{"lr", fmt::format("{}", config.base_lr)},
                          {"beta1", fmt::format("{}", config.beta1)},
                          {"beta2", fmt::format("{}", config.beta2)},
                          {"epsilon", fmt::format("{}", config.epsilon)},
                          {"weight_decay", fmt::format("{}", config.weight_decay)},
                          {"max_grad_norm", "1"},
                          {"train_steps", fmt::format("{}", config.train_steps)},
                          {"warmup_steps", fmt::format("{}", config.warmup_steps)},
                          {"start_warmup_step", fmt::format("{}", config.start_warmup_step)},
                          {"steps", fmt::format("{}", steps)}};
  const std::string in = TempPath("lamb_in"), out = TempPath("lamb_out");
  ASSERT_TRUE(io::SaveSafetensors(in, tensors, h).ok());
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/tests/bert/lamb_torch.py {} {}", MLPERF_SOURCE_DIR, in, out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(file.ok()) << file.status();
  std::remove(in.c_str());
  std::remove(out.c_str());
  const std::vector<float> ours = model.ParametersToHost();
  const std::vector<TensorSlice> slices = model.slices();
  double moved = 0.0;
  for (size_t i = 0; i < slices.size(); ++i) {
    const layers::Parameter& p = model.parameter_tensors()[i];
    std::vector<float> want(slices[i].numel);
    ASSERT_TRUE(
        file->CopyTo("w/" + p.name, core::Tensor(want.data(), p.value.shape(), core::DType::kF32))
            .ok());
    double diff = 0.0, scale = 1e-30;
    for (int64_t j = 0; j < slices[i].numel; ++j) {
      const double d = ours[slices[i].offset + j] - want[j];
      diff += d * d;
      scale += static_cast<double>(want[j]) * want[j];
      moved =
          std::max(moved, static_cast<double>(std::fabs(want[j] - flats[0][slices[i].offset + j])));
    }
    EXPECT_LT(std::sqrt(diff / scale), 1e-6) << p.name;
  }
  EXPECT_GT(moved, 1e-3);  // the steps did change the weights
}

// One LAMB step in `precision` (fp16 with dynamic loss scaling): the
// gradients it produced and the parameters after it.
std::pair<std::vector<float>, std::vector<float>> StepIn(core::DType precision) {
  const ops::PrecisionScope scope(precision);
  auto comm = dist::MakeSingleProcessCommunicator();
  Bert model(Tiny(), 4);
  model.Initialize(9);
  const auto owned = test::LambTrainer(
      model, Lamb(), *comm,
      {.dynamic_loss_scaling = precision == core::DType::kF16, .initial_loss_scale = 1024.0f});
  train::Trainer& trainer = *owned;
  trainer.TrainStep(model.SyntheticBatch().batch);
  EXPECT_FALSE(trainer.LastStepSkipped());
  return {model.GradientsToHost(), model.ParametersToHost()};
}

TEST(BertTrainerTest, ReducedPrecisionStepsStayCloseToFp32) {
  // No ReLU or max-pool switches here (GELU, softmax and layer norm are
  // smooth, dropout masks are the same Philox bits), so the gradients move
  // with the precision's rounding: bf16 (8 bits) about 8x more than fp16.
  const auto [g32, w32] = StepIn(core::DType::kF32);
  const auto [g16, w16] = StepIn(core::DType::kF16);
  const auto [gbf, wbf] = StepIn(core::DType::kBF16);
  const double bf16 = testing::RelativeError(gbf, g32), fp16 = testing::RelativeError(g16, g32);
  EXPECT_LT(bf16, 1.5e-2);  // measured 4.2e-3 (fp16 6.1e-4)
  EXPECT_GT(bf16, 1e-4);
  EXPECT_LT(fp16, bf16 / 4);
  EXPECT_GT(fp16, 0.0);
  EXPECT_LT(testing::RelativeError(wbf, w32), 2e-4);  // measured 3.2e-5
  EXPECT_LT(testing::RelativeError(w16, w32), 3e-5);  // measured 4.9e-6
}

TEST(BertTrainerTest, WarmUpLeavesNoTrace) {
  auto comm = dist::MakeSingleProcessCommunicator();
  Bert model(Tiny(), 4), twin(Tiny(), 4);
  model.Initialize(6);
  twin.Initialize(6);
  const auto owned = test::LambTrainer(model, Lamb(), *comm);
  const auto twin_owned = test::LambTrainer(twin, Lamb(), *comm);
  train::Trainer &trainer = *owned, &twin_trainer = *twin_owned;
  const OwnedBatch batch = model.SyntheticBatch();
  trainer.TrainStep(batch.batch);  // non-zero moments
  const std::vector<float> params = model.ParametersToHost();
  const std::vector<float> m = trainer.OptimizerStateToHost("momentum"),
                           v = trainer.OptimizerStateToHost("second_moment");
  trainer.WarmUp(2);
  EXPECT_EQ(trainer.step(), 1);
  EXPECT_EQ(model.num_batches_tracked(), 1);
  EXPECT_EQ(model.ParametersToHost(), params);
  EXPECT_EQ(trainer.OptimizerStateToHost("momentum"), m);
  EXPECT_EQ(trainer.OptimizerStateToHost("second_moment"), v);
  // Training goes on exactly as without the warm-up: the same LAMB step
  // counter and the same dropout masks.
  for (int s = 0; s < 2; ++s) twin_trainer.TrainStep(batch.batch);
  trainer.TrainStep(batch.batch);
  EXPECT_EQ(model.ParametersToHost(), twin.ParametersToHost());
}

// Each training forward draws new dropout masks (the step count, kept on
// the model's device too, offsets every site's Philox stream), and setting
// the count back draws the same masks again.
TEST(BertTrainerTest, DropoutMasksFollowTheStepCount) {
  Bert model(Tiny(), 4);
  model.Initialize(8);
  const OwnedBatch batch = model.SyntheticBatch();
  const float first = model.ForwardTrain(batch.batch);
  const float second = model.ForwardTrain(batch.batch);
  EXPECT_EQ(model.num_batches_tracked(), 2);
  EXPECT_NE(first, second);
  model.set_num_batches_tracked(1);
  EXPECT_EQ(model.ForwardTrain(batch.batch), second);
  model.set_num_batches_tracked(0);
  EXPECT_EQ(model.ForwardTrain(batch.batch), first);
  EXPECT_NE(model.ForwardInference(batch.batch), first);  // no dropout there
}

TEST(BertTrainerTest, CheckpointHoldsLambState) {
  auto comm = dist::MakeSingleProcessCommunicator();
  Bert model(Tiny(), 4), restored(Tiny(), 4);
  // The same run seed (it also seeds the dropout streams), other weights.
  model.Initialize(7);
  restored.Initialize(7);
  std::vector<float> other = restored.ParametersToHost();
  for (float& w : other) w += 0.5f;  // the arena's padding too: compared below
  restored.ParametersFromHost(other);
  const auto owned = test::LambTrainer(model, Lamb(), *comm);
  const auto restored_owned = test::LambTrainer(restored, Lamb(), *comm);
  train::Trainer &trainer = *owned, &restored_trainer = *restored_owned;
  const OwnedBatch batch = model.SyntheticBatch();
  trainer.TrainStep(batch.batch);
  const std::string path = TempPath("bert_ckpt");
  ASSERT_TRUE(trainer.SaveCheckpoint(path).ok());
  ASSERT_TRUE(restored_trainer.LoadCheckpoint(path).ok());
  std::remove(path.c_str());
  // Per parameter in the file: the arenas' padding is not state.
  const std::vector<float> v = trainer.OptimizerStateToHost("second_moment"),
                           m = trainer.OptimizerStateToHost("momentum"),
                           rv = restored_trainer.OptimizerStateToHost("second_moment"),
                           rm = restored_trainer.OptimizerStateToHost("momentum");
  for (const TensorSlice& s : model.slices()) {
    EXPECT_EQ(std::memcmp(rv.data() + s.offset, v.data() + s.offset, s.numel * 4), 0);
    EXPECT_EQ(std::memcmp(rm.data() + s.offset, m.data() + s.offset, s.numel * 4), 0);
  }
  EXPECT_EQ(restored_trainer.step(), 1);
  // The next step (LAMB's bias correction at t = 2, the same dropout masks)
  // agrees bit for bit.
  trainer.TrainStep(batch.batch);
  restored_trainer.TrainStep(batch.batch);
  const std::vector<float> a = restored.ParametersToHost(), b = model.ParametersToHost();
  for (const TensorSlice& s : model.slices())
    EXPECT_EQ(std::memcmp(a.data() + s.offset, b.data() + s.offset, s.numel * sizeof(float)), 0);
}

// With dropout on, the backward uses the forward's masks: the gradient of
// the training loss at a fixed step matches central differences. The step
// is fixed by restarting the dropout streams (num_batches_tracked) before
// each forward.
TEST(BertTrainerTest, GradientsWithDropoutMatchFiniteDifferences) {
  BertConfig config = Tiny();
  config.hidden_dropout = 0.2f;
  config.attention_dropout = 0.2f;
  Bert model(config, 2);
  model.Initialize(9);
  const OwnedBatch batch = model.SyntheticBatch();
  const auto loss_at = [&] {
    model.set_num_batches_tracked(0);
    return static_cast<double>(model.ForwardTrain(batch.batch));
  };
  loss_at();
  model.Backward();
  const std::vector<float> grads = model.GradientsToHost();
  std::vector<float> params = model.ParametersToHost();
  const std::vector<TensorSlice> slices = model.slices();
  int checked = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    // Three entries of every tensor, by central differences in double steps.
    for (int k = 0; k < 3; ++k) {
      const int64_t j = slices[i].offset + (k * 7919) % slices[i].numel;
      const float saved = params[j];
      const float h = 1e-2f;
      params[j] = saved + h;
      model.ParametersFromHost(params);
      const double up = loss_at();
      params[j] = saved - h;
      model.ParametersFromHost(params);
      const double down = loss_at();
      params[j] = saved;
      const double numeric = (up - down) / (2 * h);
      EXPECT_NEAR(grads[j], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
          << model.parameter_tensors()[i].name << " entry " << j - slices[i].offset;
      ++checked;
    }
  }
  model.ParametersFromHost(params);
  EXPECT_EQ(checked, 3 * static_cast<int>(slices.size()));
  // Two training forwards at different steps drop different elements.
  model.set_num_batches_tracked(0);
  const float first = model.ForwardTrain(batch.batch);
  const float second = model.ForwardTrain(batch.batch);
  EXPECT_NE(first, second);
}

}  // namespace
}  // namespace mlperf::models
