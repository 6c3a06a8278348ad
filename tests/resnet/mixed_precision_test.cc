// ResNet training under mixed precision on the CPU: bf16 and fp16 steps
// within their tolerance of the fp32 one, and fp16's dynamic loss scaling
// (skip, back off, grow) with the parameters untouched by a skipped step.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string_view>
#include <vector>

#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/precision.h"
#include "reference/models/resnet.h"
#include "reference/trainer/trainer.h"
#include "tests/core/test_util.h"
#include "tests/resnet/random_batch.h"

namespace mlperf::models {
namespace {

const ResNetConfig kTiny{
    .base_width = 4, .blocks = {1, 1, 1, 1}, .num_classes = 5, .image_size = 32};

using test::HostBatch;
using test::RandomBatch;

// Two steps an epoch.
const test::ResnetRecipe kRecipe{
    .base_lr = 2.0, .warmup_epochs = 1, .decay_epochs = 4, .weight_decay = 1e-4};

struct StepResult {
  float loss;
  std::vector<float> gradients, parameters;
};

// One LARS step of a width-8 ResNet on 16 random 64x64 images in
// `precision`; with `round_images` the images are first rounded to it (and
// the step runs in fp32).
StepResult OneStep(core::DType precision, bool round_images = false) {
  const ops::PrecisionScope scope(round_images ? core::DType::kF32 : precision);
  const ResNetConfig config{
      .base_width = 8, .blocks = {1, 1, 1, 1}, .num_classes = 5, .image_size = 64};
  ResNet model(config, 16);
  model.Initialize(3);
  HostBatch batch = RandomBatch(model, 4);
  if (round_images) {
    const core::Tensor images(batch.images.data(), {static_cast<int64_t>(batch.images.size())},
                              core::DType::kF32);
    ops::RoundToPrecision(precision, images, images);
  }
  auto comm = dist::MakeSingleProcessCommunicator();
  const float loss = test::ResnetTrainer(model, kRecipe, 2, *comm)
                         ->TrainStep(model.InputBatch(batch.images.data(), batch.labels.data(),
                                                      model.batch_size()));
  return {loss, model.GradientsToHost(), model.ParametersToHost()};
}

TEST(ResNetMixedPrecisionTest, ReducedPrecisionStepsAreWithinTheirTolerance) {
  const StepResult fp32 = OneStep(core::DType::kF32);
  for (core::DType precision : {core::DType::kBF16, core::DType::kF16}) {
    const std::string_view name = ops::PrecisionName(precision);
    const StepResult mixed = OneStep(precision);
    EXPECT_NEAR(mixed.loss, fp32.loss, 2e-3 * fp32.loss) << name;
    EXPECT_LT(testing::RelativeError(mixed.parameters, fp32.parameters), 2e-3) << name;
    // Gradients: ReLU and max-pool switches make them jump where a value
    // crosses a tie, so even a 1e-4 relative change of the images alone
    // moves them by about 1% (measured). The yardstick is what rounding
    // just the images to the precision does to an fp32 step (8% for bf16,
    // 3% for fp16 here); rounding every GEMM-class op measured 1.9x and
    // 1.7x that.
    const double error = testing::RelativeError(mixed.gradients, fp32.gradients);
    const double images_only =
        testing::RelativeError(OneStep(precision, true).gradients, fp32.gradients);
    EXPECT_LT(error, 3 * images_only) << name;
    EXPECT_GT(error, images_only / 2) << name << ": it did not run in the precision";
  }
}

TEST(ResNetMixedPrecisionTest, Fp16LossScalerSkipsBacksOffAndGrows) {
  const ops::PrecisionScope scope(core::DType::kF16);
  ResNet model(kTiny, 4);
  model.Initialize(5);
  const HostBatch batch = RandomBatch(model, 6);
  const Batch input = model.InputBatch(batch.images.data(), batch.labels.data(), 4);
  auto comm = dist::MakeSingleProcessCommunicator();
  const auto owned =
      test::ResnetTrainer(model, kRecipe, 2, *comm,
                          {.dynamic_loss_scaling = true,
                           .initial_loss_scale = 0x1p40f,  // the loss gradient alone overflows fp16
                           .loss_scale_params = {.growth_interval = 2}});
  train::Trainer& trainer = *owned;

  const std::vector<float> start = model.ParametersToHost();
  trainer.TrainStep(input);
  EXPECT_TRUE(trainer.LastStepSkipped());
  EXPECT_EQ(trainer.LossScaleToHost(), 0x1p39f);
  EXPECT_EQ(model.ParametersToHost(), start);
  EXPECT_EQ(trainer.step(), 1);  // the schedule moves on regardless
  for (float m : trainer.OptimizerStateToHost("momentum")) ASSERT_EQ(m, 0.0f);

  // Halving each step until the gradients fit fp16, then a real step.
  int skipped = 1;
  while (trainer.LastStepSkipped() && skipped < 40) {
    trainer.TrainStep(input);
    skipped += trainer.LastStepSkipped() ? 1 : 0;
  }
  ASSERT_FALSE(trainer.LastStepSkipped());
  EXPECT_GT(skipped, 20);  // 2^40 / 2^skipped: the first scale that fits is far below
  const float fitted = trainer.LossScaleToHost();
  EXPECT_EQ(fitted, std::ldexp(1.0f, 40 - skipped));
  EXPECT_NE(model.ParametersToHost(), start);
  for (float g : model.GradientsToHost()) ASSERT_TRUE(std::isfinite(g));

  // growth_interval = 2 clean steps in a row double the scale (the first
  // clean one above counts).
  trainer.TrainStep(input);
  ASSERT_FALSE(trainer.LastStepSkipped());
  EXPECT_EQ(trainer.LossScaleToHost(), 2 * fitted);

  // The warm-up and checkpoints keep the scale.
  const float before = trainer.LossScaleToHost();
  trainer.WarmUp(3);
  EXPECT_EQ(trainer.LossScaleToHost(), before);
}

TEST(ResNetMixedPrecisionTest, UnscaledFp16GradientsMatchTheScaledOnes) {
  // A scale that fits (2^8) changes fp16's rounding of small gradients but
  // not their value: after unscaling they match a step with scale 1 within
  // fp16 tolerance.
  const auto gradients = [](float scale) {
    const ops::PrecisionScope fp16(core::DType::kF16);
    ResNet model(kTiny, 4);
    model.Initialize(7);
    const HostBatch batch = RandomBatch(model, 8);
    auto comm = dist::MakeSingleProcessCommunicator();
    const auto owned = test::ResnetTrainer(
        model, kRecipe, 2, *comm, {.dynamic_loss_scaling = true, .initial_loss_scale = scale});
    train::Trainer& trainer = *owned;
    trainer.TrainStep(model.InputBatch(batch.images.data(), batch.labels.data(), 4));
    EXPECT_FALSE(trainer.LastStepSkipped());
    return model.GradientsToHost();
  };
  const std::vector<float> scaled = gradients(256.0f), unscaled = gradients(1.0f);
  const double error = testing::RelativeError(scaled, unscaled);
  EXPECT_LT(error, 1e-2);
  EXPECT_GT(error, 0.0);
}

// The stage outputs are stored activations (precision.h): under bf16/fp16
// the CPU keeps them in fp32, holding values of the precision, even with
// typed activations on (a device-only storage).
TEST(ResNetMixedPrecisionTest, StageOutputsHoldValuesOfThePrecision) {
  const ops::TypedActivationsScope typed(true);
  for (core::DType precision : {core::DType::kBF16, core::DType::kF16}) {
    const ops::PrecisionScope scope(precision);
    ResNet model(kTiny, 4);
    model.Initialize(9);
    const HostBatch batch = RandomBatch(model, 10);
    model.ForwardTrain(batch.images.data(), batch.labels.data(), 0.1f);
    for (int s = 0; s < 4; ++s) {
      const core::Tensor& out = model.stage_output(s);
      ASSERT_EQ(out.dtype(), core::DType::kF32);
      std::vector<float> stored(out.f32(), out.f32() + out.numel()), rounded(out.numel());
      ops::RoundToPrecision(precision, out,
                            core::Tensor(rounded.data(), out.shape(), core::DType::kF32));
      EXPECT_EQ(stored, rounded) << ops::PrecisionName(precision) << " stage " << s;
    }
  }
}

// Under bf16 on a CPU with AMX the host stores ResNet's channels-last
// activations and their gradients in bf16 (ops::ActivationStorageType):
// two LARS steps give fp32 storage's losses, parameters, momentum and
// running statistics bit for bit, and inference its logits.
TEST(ResNetMixedPrecisionTest, Bf16StorageOnTheHostGivesTheBitsOfFp32Storage) {
  const ops::PrecisionScope scope(core::DType::kBF16);
  if (!cpu::GemmsRoundToBf16()) GTEST_SKIP() << "no AMX bf16 here: host storage stays fp32";
  struct Run {
    test::TwoSteps steps;
    std::vector<float> logits;
    core::DType stored = core::DType::kF32;
  };
  const auto run = [](bool typed) {
    const ops::TypedActivationsScope storage(typed);
    Run r;
    r.steps = test::RunTwoSteps(core::Layout::kNHWC, core::Device::kCpu, /*lars=*/true);
    ResNet model(test::TwinModel(core::Layout::kNHWC, core::Device::kCpu), 4);
    model.Initialize(5);
    const HostBatch batch = test::BatchInLayout(model, 6);
    model.ForwardTrain(batch.images.data(), batch.labels.data(), 0.1f);  // running statistics
    model.EvaluateBatch(batch.images.data(), batch.labels.data(), 4, core::Device::kCpu);
    r.logits = model.ToHost(model.logits());
    r.stored = model.stage_output(2).dtype();
    return r;
  };
  const Run typed = run(true), fp32 = run(false);
  EXPECT_EQ(typed.stored, core::DType::kBF16);
  EXPECT_EQ(fp32.stored, core::DType::kF32);
  EXPECT_EQ(typed.steps.loss[0], fp32.steps.loss[0]);
  EXPECT_EQ(typed.steps.loss[1], fp32.steps.loss[1]);
  EXPECT_EQ(typed.steps.end, fp32.steps.end);
  EXPECT_EQ(typed.steps.momentum, fp32.steps.momentum);
  EXPECT_EQ(typed.steps.buffers, fp32.steps.buffers);
  EXPECT_EQ(typed.logits, fp32.logits);
}

// One step in NCHW and in NHWC on the CPU, the same values summed in
// another order, in bf16 and fp16: what the device comparisons' tolerances
// (random_batch.h) leave for rounding. (Two LARS steps amplify such a
// difference to 5-85% of the update in bf16, too much for a comparison.)
TEST(ResNetMixedPrecisionTest, OneStepAgreesAcrossLayouts) {
  for (core::DType precision : {core::DType::kBF16, core::DType::kF16}) {
    const ops::PrecisionScope scope(precision);
    const test::OneStep nchw = test::RunOneStep(core::Layout::kNCHW, core::Device::kCpu);
    const test::OneStep nhwc = test::RunOneStep(core::Layout::kNHWC, core::Device::kCpu);
    const std::string_view name = ops::PrecisionName(precision);
    EXPECT_NEAR(nhwc.loss, nchw.loss, 1e-3 * nchw.loss) << name;
    EXPECT_LT(testing::RelativeError(nhwc.logits, nchw.logits), test::kReducedLogitsTolerance / 3)
        << name;
    EXPECT_LT(testing::RelativeError(nhwc.gradients, nchw.gradients),
              test::kReducedGradientTolerance / 3)
        << name;
  }
}

}  // namespace
}  // namespace mlperf::models
