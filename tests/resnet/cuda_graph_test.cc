// The training step recorded once as a CUDA graph and replayed
// (TrainerConfig::cuda_graph) against the same steps run as queued, on two
// copies of one device model: a new batch and a new learning rate every
// step, an evaluation in between (which may move scratch memory and so
// forces a new recording), LARS and SGD with its L2 term, and fp16 loss
// scaling whose overflow skips are decided inside the recording. Label gpu;
// skips without a device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <string>
#include <vector>

#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/resnet.h"
#include "reference/trainer/trainer.h"
#include "tests/core/test_util.h"
#include "tests/resnet/random_batch.h"

namespace mlperf::models {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device (or a build without CUDA)"

using test::HostBatch;
using test::RandomBatch;
using testing::RelativeError;

ResNetConfig Tiny(core::Layout layout) {
  return {.base_width = 8,
          .blocks = {1, 1, 1, 1},
          .num_classes = 10,
          .image_size = 32,
          .layout = layout,
          .device = core::Device::kCuda};
}

struct Case {
  bool lars;
  core::Layout layout;
};

class CudaGraphStepTest : public ::testing::TestWithParam<Case> {};

TEST_P(CudaGraphStepTest, RecordedStepsMatchStepsAsQueued) {
  SKIP_WITHOUT_DEVICE();
  ResNet queued_model(Tiny(GetParam().layout), 4), recorded_model(Tiny(GetParam().layout), 4);
  queued_model.Initialize(5);
  recorded_model.Initialize(5);
  // Warm-up over 4 of the 8 steps: every step has its own rate.
  const test::ResnetRecipe recipe{.lars = GetParam().lars,
                                  .base_lr = 2.0,
                                  .warmup_epochs = 2,
                                  .decay_epochs = 4,
                                  .weight_decay = 5e-4};
  auto comm = dist::MakeSingleProcessCommunicator();
  const auto queued_trainer = test::ResnetTrainer(queued_model, recipe, 2, *comm);
  const auto recorded_trainer =
      test::ResnetTrainer(recorded_model, recipe, 2, *comm, {.cuda_graph = true});
  train::Trainer &queued = *queued_trainer, &recorded = *recorded_trainer;
  const std::vector<float> start = queued_model.ParametersToHost();
  for (int step = 0; step < 8; ++step) {
    const HostBatch b = RandomBatch(queued_model, 40 + step);
    const float loss_queued = queued.TrainStep(
        queued_model.InputBatch(b.images.data(), b.labels.data(), queued_model.batch_size()));
    const float loss_recorded = recorded.TrainStep(
        recorded_model.InputBatch(b.images.data(), b.labels.data(), recorded_model.batch_size()));
    EXPECT_NEAR(loss_recorded, loss_queued, 1e-5 * std::abs(loss_queued)) << "step " << step;
    if (step == 3) {
      // A partial evaluation batch between two steps.
      const HostBatch e = RandomBatch(queued_model, 99);
      const MetricSums a =
          queued_model.EvaluateBatch(queued_model.InputBatch(e.images.data(), e.labels.data(), 3));
      const MetricSums r = recorded_model.EvaluateBatch(
          recorded_model.InputBatch(e.images.data(), e.labels.data(), 3));
      EXPECT_EQ(a.numerator, r.numerator);
    }
  }
  // Step 1 runs as queued, step 2 is recorded; after the evaluation at most
  // one more runs as queued before the next recording.
  EXPECT_GE(recorded.replayed_steps(), 5);
  EXPECT_EQ(recorded.step(), 8);
  EXPECT_EQ(recorded_model.num_batches_tracked(), queued_model.num_batches_tracked());
  EXPECT_EQ(queued.replayed_steps(), 0);
  const std::vector<float> w = queued_model.ParametersToHost();
  EXPECT_GT(RelativeError(start, w), 1e-4);  // the steps did move the weights
  EXPECT_LT(RelativeError(recorded_model.ParametersToHost(), w), 1e-5);
  EXPECT_LT(RelativeError(recorded.OptimizerStateToHost("momentum"),
                          queued.OptimizerStateToHost("momentum")),
            1e-5);
  EXPECT_LT(RelativeError(recorded_model.BuffersToHost(), queued_model.BuffersToHost()), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Optimizers, CudaGraphStepTest,
                         ::testing::Values(Case{true, core::Layout::kNHWC},
                                           Case{true, core::Layout::kNCHW},
                                           Case{false, core::Layout::kNHWC}),
                         [](const auto& info) {
                           return std::string(info.param.lars ? "Lars" : "Sgd") +
                                  (info.param.layout == core::Layout::kNHWC ? "Nhwc" : "Nchw");
                         });

// Steps the host does not wait for (Trainer::QueueStep, as run_closed
// trains), each from one host buffer that is refilled with the next batch
// as soon as the step is queued (as a loader reuses its buffers), against
// steps that wait for their loss, recorded or not: the staging of the
// uploads (models/upload_staging) must have taken each batch before it is
// overwritten and kept it until the device read it.
TEST(QueuedStepTest, StepsWithoutWaitingMatchStepsThatWait) {
  SKIP_WITHOUT_DEVICE();
  for (const bool cuda_graph : {false, true}) {
    ResNet waited_model(Tiny(core::Layout::kNHWC), 4), queued_model(Tiny(core::Layout::kNHWC), 4);
    waited_model.Initialize(7);
    queued_model.Initialize(7);
    const test::ResnetRecipe recipe{
        .base_lr = 2.0, .warmup_epochs = 2, .decay_epochs = 4, .weight_decay = 1e-4};
    auto comm = dist::MakeSingleProcessCommunicator();
    const auto waited_trainer =
        test::ResnetTrainer(waited_model, recipe, 2, *comm, {.cuda_graph = cuda_graph});
    const auto queued_trainer =
        test::ResnetTrainer(queued_model, recipe, 2, *comm, {.cuda_graph = cuda_graph});
    train::Trainer &waited = *waited_trainer, &queued = *queued_trainer;
    HostBatch reused = RandomBatch(queued_model, 70);
    for (int step = 0; step < 8; ++step) {
      const HostBatch b = RandomBatch(waited_model, 70 + step);
      waited.TrainStep(
          waited_model.InputBatch(b.images.data(), b.labels.data(), waited_model.batch_size()));
      const Batch in = queued_model.InputBatch(reused.images.data(), reused.labels.data(), 4);
      queued.QueueStep(std::span(&in, 1));
      // The next batch, written over this one's memory.
      const HostBatch next = RandomBatch(queued_model, 71 + step);
      std::copy(next.images.begin(), next.images.end(), reused.images.begin());
      std::copy(next.labels.begin(), next.labels.end(), reused.labels.begin());
    }
    ops::Synchronize(core::Device::kCuda);
    EXPECT_EQ(queued.step(), 8);
    // The same kernels in the same order: any difference is a batch that the
    // staging lost (a wrong batch moves the weights by far more).
    EXPECT_LT(RelativeError(queued_model.ParametersToHost(), waited_model.ParametersToHost()), 1e-6)
        << (cuda_graph ? "recorded" : "as queued");
  }
}

// fp16 with a first scale too large (2^24): the first steps overflow and are
// skipped on the device, inside the recording, until the scale fits.
TEST(CudaGraphLossScaleTest, SkipsAndBackOffsMatchStepsAsQueued) {
  SKIP_WITHOUT_DEVICE();
  const ops::PrecisionScope fp16(core::DType::kF16);
  ResNet queued_model(Tiny(core::Layout::kNHWC), 4), recorded_model(Tiny(core::Layout::kNHWC), 4);
  queued_model.Initialize(6);
  recorded_model.Initialize(6);
  const test::ResnetRecipe recipe{
      .base_lr = 1.0, .warmup_epochs = 1, .decay_epochs = 41, .weight_decay = 1e-4};
  train::TrainerConfig config{.dynamic_loss_scaling = true,
                              .initial_loss_scale = 0x1p24f,
                              .loss_scale_params = {.growth_interval = 3}};
  auto comm = dist::MakeSingleProcessCommunicator();
  const auto queued_trainer = test::ResnetTrainer(queued_model, recipe, 4, *comm, config);
  config.cuda_graph = true;
  const auto recorded_trainer = test::ResnetTrainer(recorded_model, recipe, 4, *comm, config);
  train::Trainer &queued = *queued_trainer, &recorded = *recorded_trainer;
  int skipped = 0;
  for (int step = 0; step < 16; ++step) {
    const HostBatch b = RandomBatch(queued_model, 60 + step);
    queued.TrainStep(
        queued_model.InputBatch(b.images.data(), b.labels.data(), queued_model.batch_size()));
    recorded.TrainStep(
        recorded_model.InputBatch(b.images.data(), b.labels.data(), recorded_model.batch_size()));
    ASSERT_EQ(recorded.LastStepSkipped(), queued.LastStepSkipped()) << "step " << step;
    ASSERT_EQ(recorded.LossScaleToHost(), queued.LossScaleToHost()) << "step " << step;
    skipped += queued.LastStepSkipped() ? 1 : 0;
  }
  EXPECT_GT(skipped, 1);   // some steps overflowed ...
  EXPECT_LT(skipped, 16);  // ... and later ones trained
  EXPECT_GE(recorded.replayed_steps(), 14);
  EXPECT_LT(RelativeError(recorded_model.ParametersToHost(), queued_model.ParametersToHost()),
            1e-5);
}

}  // namespace
}  // namespace mlperf::models
