// The 3D U-Net on a CUDA device against the same model on the CPU (the
// oracle), in both layouts: identical initial weights, then the DiceCE loss,
// the logits and every gradient, Nesterov trainer steps, and a whole case
// through the sliding window agree within fp32 tolerances (cuDNN sums in
// other orders than the CPU's GEMMs); and one pass under bf16 and fp16,
// with the activations stored in fp32 or in that type, within the
// tolerances measured across the CPU's two layouts (one_step.h).
// Skips without a device (and in builds without CUDA).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "benchmarks/unet3d/recipe.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/unet3d.h"
#include "reference/trainer/trainer.h"
#include "tests/core/test_util.h"
#include "tests/unet3d/one_step.h"

namespace mlperf::models {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device (or a build without CUDA)"

UNet3DConfig Small(core::Layout layout, core::Device device) {
  return {.filters = {4, 8, 16}, .roi = 32, .layout = layout, .device = device};
}

using testing::RelativeError;

// A trainer with the 3D U-Net benchmark's Nesterov SGD and schedule.
std::unique_ptr<train::Trainer> UnetTrainer(UNet3D& model, const benchmarks::unet3d::Recipe& recipe,
                                            int64_t steps_per_epoch, dist::Communicator& comm,
                                            const train::TrainerConfig& config = {}) {
  return std::make_unique<train::Trainer>(model, benchmarks::unet3d::MakeOptimizer(recipe, model),
                                          benchmarks::unet3d::MakeSchedule(recipe, steps_per_epoch),
                                          config, comm);
}

class UNet3DGpuTest : public ::testing::TestWithParam<core::Layout> {};

TEST_P(UNet3DGpuTest, ForwardAndEveryGradientMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  UNet3D cpu_model(Small(GetParam(), core::Device::kCpu), 2);
  UNet3D gpu_model(Small(GetParam(), core::Device::kCuda), 2);
  cpu_model.Initialize(3);
  gpu_model.Initialize(3);
  ASSERT_EQ(cpu_model.ParametersToHost(), gpu_model.ParametersToHost());
  const OwnedBatch batch = cpu_model.SyntheticBatch();
  const float loss_cpu = cpu_model.ForwardTrain(batch.batch);
  const float loss_gpu = gpu_model.ForwardTrain(batch.batch);
  EXPECT_TRUE(std::isfinite(loss_gpu));
  EXPECT_NEAR(loss_gpu, loss_cpu, 1e-4 * std::abs(loss_cpu));
  EXPECT_LT(
      RelativeError(gpu_model.ToHost(gpu_model.logits()), cpu_model.ToHost(cpu_model.logits())),
      1e-4);
  cpu_model.Backward();
  gpu_model.Backward();
  testing::ExpectGradientsClose(gpu_model.GradientsToHost(), cpu_model.GradientsToHost(),
                                cpu_model.slices(), cpu_model.parameter_names(), 1e-3, 1e-4);
}

TEST_P(UNet3DGpuTest, NesterovStepsMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  UNet3D cpu_model(Small(GetParam(), core::Device::kCpu), 2);
  UNet3D gpu_model(Small(GetParam(), core::Device::kCuda), 2);
  cpu_model.Initialize(5);
  gpu_model.Initialize(5);
  const benchmarks::unet3d::Recipe recipe = {
      .base_lr = 0.5, .warmup_epochs = 0, .momentum = 0.9, .weight_decay = 1e-4};
  auto comm_cpu = dist::MakeSingleProcessCommunicator();
  auto comm_gpu = dist::MakeSingleProcessCommunicator();
  const auto cpu_owned = UnetTrainer(cpu_model, recipe, 10, *comm_cpu);
  const auto gpu_owned = UnetTrainer(gpu_model, recipe, 10, *comm_gpu);
  train::Trainer &cpu_trainer = *cpu_owned, &gpu_trainer = *gpu_owned;
  const OwnedBatch batch = cpu_model.SyntheticBatch();
  for (int step = 1; step <= 3; ++step) {
    const float loss_cpu = cpu_trainer.TrainStep(batch.batch);
    const float loss_gpu = gpu_trainer.TrainStep(batch.batch);
    EXPECT_NEAR(loss_gpu, loss_cpu, 1e-3 * std::abs(loss_cpu)) << "step " << step;
  }
  EXPECT_LT(RelativeError(gpu_model.ParametersToHost(), cpu_model.ParametersToHost()), 1e-4);
}

// The step recorded as a CUDA graph (TrainerConfig::cuda_graph) and
// replayed, against the same steps run as queued, through the epoch
// warm-up's changing rate.
TEST_P(UNet3DGpuTest, RecordedStepsMatchStepsAsQueued) {
  SKIP_WITHOUT_DEVICE();
  UNet3D queued_model(Small(GetParam(), core::Device::kCuda), 2);
  UNet3D recorded_model(Small(GetParam(), core::Device::kCuda), 2);
  queued_model.Initialize(6);
  recorded_model.Initialize(6);
  const benchmarks::unet3d::Recipe recipe = {
      .base_lr = 0.5, .warmup_epochs = 3, .momentum = 0.9, .weight_decay = 1e-4};
  auto comm = dist::MakeSingleProcessCommunicator();
  const auto queued_owned = UnetTrainer(queued_model, recipe, 2, *comm);
  const auto recorded_owned = UnetTrainer(recorded_model, recipe, 2, *comm, {.cuda_graph = true});
  train::Trainer &queued = *queued_owned, &recorded = *recorded_owned;
  const OwnedBatch batch = queued_model.SyntheticBatch();
  for (int step = 1; step <= 6; ++step) {
    const float loss_queued = queued.TrainStep(batch.batch);
    const float loss_recorded = recorded.TrainStep(batch.batch);
    EXPECT_NEAR(loss_recorded, loss_queued, 1e-5 * std::abs(loss_queued)) << "step " << step;
  }
  EXPECT_EQ(recorded.replayed_steps(), 5);
  EXPECT_LT(RelativeError(recorded_model.ParametersToHost(), queued_model.ParametersToHost()),
            1e-5);
  EXPECT_LT(RelativeError(recorded.OptimizerStateToHost("momentum"),
                          queued.OptimizerStateToHost("momentum")),
            1e-5);
}

// A case whose axes take the crop, the overlap and the padding paths, two
// windows at a time.
TEST_P(UNet3DGpuTest, SlidingWindowCaseMatchesTheCpu) {
  SKIP_WITHOUT_DEVICE();
  UNet3D cpu_model(Small(GetParam(), core::Device::kCpu), 2);
  UNet3D gpu_model(Small(GetParam(), core::Device::kCuda), 2);
  cpu_model.Initialize(41);
  gpu_model.Initialize(41);
  const int64_t d = 37, h = 50, w = 27;
  std::vector<float> image(d * h * w);
  std::vector<int32_t> labels(image.size());
  for (size_t i = 0; i < image.size(); ++i) {
    image[i] = 2.0f * core::PhiloxUniform(42, 0, i) - 1.0f;
    labels[i] = image[i] > 0.5f ? 2 : image[i] > -0.2f ? 1 : 0;
  }
  const core::Tensor image_t(image.data(), {1, 1, d, h, w}, core::DType::kF32);
  const core::Tensor labels_t(labels.data(), {1, d, h, w}, core::DType::kI32);
  const std::vector<double> dice_cpu = cpu_model.EvaluateCase(image_t, labels_t, {.roi = 32});
  const std::vector<double> dice_gpu = gpu_model.EvaluateCase(image_t, labels_t, {.roi = 32});
  ASSERT_EQ(dice_gpu.size(), dice_cpu.size());
  for (size_t c = 0; c < dice_cpu.size(); ++c)
    EXPECT_NEAR(dice_gpu[c], dice_cpu[c], 1e-4) << "class " << c + 1;
}

INSTANTIATE_TEST_SUITE_P(Layouts, UNet3DGpuTest,
                         ::testing::Values(core::Layout::kNCDHW, core::Layout::kNDHWC),
                         [](const auto& info) {
                           return info.param == core::Layout::kNCDHW ? "NCDHW" : "NDHWC";
                         });

// (layout, reduced precision, typed storage on the device): the
// convolutions in that type on the device, the activations stored in fp32
// or in that type, rounded at the same points on the CPU.
class UNet3DReducedPrecisionTest
    : public ::testing::TestWithParam<std::tuple<core::Layout, core::DType, bool>> {};

TEST_P(UNet3DReducedPrecisionTest, OnePassMatchesTheCpu) {
  SKIP_WITHOUT_DEVICE();
  const auto [layout, precision, typed] = GetParam();
  const ops::PrecisionScope scope(precision);
  const test::UNetStep cpu = test::RunUNetStep(layout, core::Device::kCpu);
  const ops::TypedActivationsScope storage(typed);
  const test::UNetStep gpu = test::RunUNetStep(layout, core::Device::kCuda);
  ASSERT_EQ(gpu.stored, typed ? precision : core::DType::kF32);
  ASSERT_TRUE(std::isfinite(gpu.loss));
  EXPECT_LT(std::fabs(gpu.loss - cpu.loss) / std::fabs(cpu.loss), test::kUNetReducedLossTolerance);
  EXPECT_LT(RelativeError(gpu.logits, cpu.logits), test::kUNetReducedLogitsTolerance);
  EXPECT_LT(RelativeError(gpu.gradients, cpu.gradients), test::kUNetReducedGradientTolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, UNet3DReducedPrecisionTest,
    ::testing::Combine(::testing::Values(core::Layout::kNCDHW, core::Layout::kNDHWC),
                       ::testing::Values(core::DType::kBF16, core::DType::kF16), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<core::Layout, core::DType, bool>>& info) {
      return std::string(std::get<0>(info.param) == core::Layout::kNDHWC ? "Ndhwc" : "Ncdhw") +
             std::string(ops::PrecisionName(std::get<1>(info.param))) +
             (std::get<2>(info.param) ? "Typed" : "");
    });

}  // namespace
}  // namespace mlperf::models
