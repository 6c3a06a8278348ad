// The ResNet on a CUDA device against the same model on the CPU (the
// oracle): identical initial weights, then forward loss and logits, every
// gradient, BN running statistics, trainer steps (LARS and SGD), inference
// and checkpoints agree within fp32 tolerances (cuDNN picks other summation
// orders than the CPU's im2col GEMMs). The bucketed all-reduce that overlaps
// the backward pass is checked through a recording communicator. Tests that
// need a device skip cleanly without one (and in builds without CUDA).
#include <gtest/gtest.h>
#ifdef MLPERF_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include <cmath>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
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

class ResNetGpuTest : public ::testing::TestWithParam<core::Layout> {};

TEST_P(ResNetGpuTest, ForwardAndEveryGradientMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  ResNet cpu_model(test::TwinModel(GetParam(), core::Device::kCpu), 4);
  ResNet gpu_model(test::TwinModel(GetParam(), core::Device::kCuda), 4);
  cpu_model.Initialize(3);
  gpu_model.Initialize(3);
  // Initialisation happens on the host for both: bitwise equal.
  const std::vector<float> w_cpu = cpu_model.ParametersToHost();
  ASSERT_EQ(w_cpu, gpu_model.ParametersToHost());
  ASSERT_EQ(cpu_model.BuffersToHost(), gpu_model.BuffersToHost());

  const HostBatch batch = RandomBatch(cpu_model, 4);
  const float loss_cpu = cpu_model.ForwardTrain(batch.images.data(), batch.labels.data(), 0.1f);
  const float loss_gpu = gpu_model.ForwardTrain(batch.images.data(), batch.labels.data(), 0.1f);
  EXPECT_TRUE(std::isfinite(loss_gpu));
  EXPECT_NEAR(loss_gpu, loss_cpu, 1e-4 * std::abs(loss_cpu));
  EXPECT_LT(
      RelativeError(gpu_model.ToHost(gpu_model.logits()), cpu_model.ToHost(cpu_model.logits())),
      1e-4);
  for (int s = 0; s <= 4; ++s)
    EXPECT_LT(RelativeError(gpu_model.ToHost(gpu_model.stage_output(s)),
                            cpu_model.ToHost(cpu_model.stage_output(s))),
              1e-4)
        << "stage " << s;
  EXPECT_LT(RelativeError(gpu_model.BuffersToHost(), cpu_model.BuffersToHost()), 1e-5);

  cpu_model.Backward();
  gpu_model.Backward();
  testing::ExpectGradientsClose(gpu_model.GradientsToHost(), cpu_model.GradientsToHost(),
                                cpu_model.slices(), cpu_model.parameter_names(), 1e-3, 1e-4);
}

TEST_P(ResNetGpuTest, InferenceMatchesTheCpu) {
  SKIP_WITHOUT_DEVICE();
  ResNet cpu_model(test::TwinModel(GetParam(), core::Device::kCpu), 8);
  ResNet gpu_model(test::TwinModel(GetParam(), core::Device::kCuda), 8);
  cpu_model.Initialize(5);
  gpu_model.Initialize(5);
  // Non-trivial running statistics first.
  const HostBatch train = RandomBatch(cpu_model, 6);
  cpu_model.ForwardTrain(train.images.data(), train.labels.data(), 0.0f);
  gpu_model.ForwardTrain(train.images.data(), train.labels.data(), 0.0f);
  HostBatch eval = RandomBatch(cpu_model, 7);
  eval.labels[6] = -1;  // padding never counts
  const int64_t correct_cpu = cpu_model.EvaluateBatch(eval.images.data(), eval.labels.data(), 7);
  const int64_t correct_gpu = gpu_model.EvaluateBatch(eval.images.data(), eval.labels.data(), 7);
  EXPECT_LT(
      RelativeError(gpu_model.ToHost(gpu_model.logits()), cpu_model.ToHost(cpu_model.logits())),
      1e-4);
  EXPECT_EQ(correct_gpu, correct_cpu);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ResNetGpuTest,
                         ::testing::Values(core::Layout::kNCHW, core::Layout::kNHWC),
                         [](const auto& info) {
                           return info.param == core::Layout::kNCHW ? "NCHW" : "NHWC";
                         });

// Two trainer steps (so momentum matters) on both devices, at a learning
// rate where rounding is not amplified (ResNetTrainerTest.
// TwoStepsAgreeAcrossLayouts: at 2.0 two CPU runs in different layouts end
// 1.5e-2 apart).
void ExpectTrainerMatchesCpu(bool lars, core::Layout layout) {
  const test::TwoSteps cpu = test::RunTwoSteps(layout, core::Device::kCpu, lars);
  const test::TwoSteps gpu = test::RunTwoSteps(layout, core::Device::kCuda, lars);
  ASSERT_EQ(gpu.start, cpu.start);
  for (int step = 0; step < 2; ++step)
    EXPECT_NEAR(gpu.loss[step], cpu.loss[step], 1e-4 * std::abs(cpu.loss[step])) << "step " << step;
  // The update itself must be reproduced, not just the (shared) start.
  EXPECT_GT(RelativeError(cpu.start, cpu.end), 1e-4);
  EXPECT_LT(RelativeError(gpu.update, cpu.update), 1e-3);
  EXPECT_LT(RelativeError(gpu.momentum, cpu.momentum), 1e-3);
  EXPECT_LT(RelativeError(gpu.buffers, cpu.buffers), 1e-4);
}

TEST(ResNetGpuTrainerTest, LarsStepsMatchTheCpuNchw) {
  SKIP_WITHOUT_DEVICE();
  ExpectTrainerMatchesCpu(/*lars=*/true, core::Layout::kNCHW);
}

TEST(ResNetGpuTrainerTest, LarsStepsMatchTheCpuNhwc) {
  SKIP_WITHOUT_DEVICE();
  ExpectTrainerMatchesCpu(/*lars=*/true, core::Layout::kNHWC);
}

TEST(ResNetGpuTrainerTest, SgdStepsWithL2MatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  ExpectTrainerMatchesCpu(/*lars=*/false, core::Layout::kNHWC);
}

TEST(ResNetGpuTrainerTest, WarmUpRestoresDeviceStateBitwise) {
  SKIP_WITHOUT_DEVICE();
  ResNet model(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 4);
  model.Initialize(8);
  auto comm = dist::MakeSingleProcessCommunicator();
  const auto owned = test::ResnetTrainer(
      model, {.base_lr = 2.0, .warmup_epochs = 1, .decay_epochs = 41, .weight_decay = 1e-4}, 4,
      *comm);
  train::Trainer& trainer = *owned;
  const HostBatch batch = RandomBatch(model, 9);
  trainer.TrainStep(model.InputBatch(batch.images.data(), batch.labels.data(), model.batch_size()));
  const std::vector<float> params = model.ParametersToHost(), buffers = model.BuffersToHost();
  const std::vector<float> momentum = trainer.OptimizerStateToHost("momentum");
  trainer.WarmUp(2);
  EXPECT_EQ(trainer.step(), 1);
  EXPECT_EQ(model.num_batches_tracked(), 1);
  EXPECT_EQ(model.ParametersToHost(), params);
  EXPECT_EQ(model.BuffersToHost(), buffers);
  EXPECT_EQ(trainer.OptimizerStateToHost("momentum"), momentum);
}

#ifdef MLPERF_HAVE_CUDA
// The GPU data path (run_closed --gpu_decode) hands the model batches whose
// images are on the device already: the same step and the same predictions.
TEST(ResNetGpuTrainerTest, ImagesOnTheDeviceTrainAndEvaluateAsFromTheHost) {
  SKIP_WITHOUT_DEVICE();
  ResNet from_host(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 4);
  ResNet from_device(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 4);
  from_host.Initialize(8);
  from_device.Initialize(8);
  auto comm = dist::MakeSingleProcessCommunicator();
  const test::ResnetRecipe recipe = {
      .base_lr = 0.1, .warmup_epochs = 1, .decay_epochs = 41, .weight_decay = 1e-4};
  const auto host_owned = test::ResnetTrainer(from_host, recipe, 4, *comm);
  const auto device_owned = test::ResnetTrainer(from_device, recipe, 4, *comm);
  train::Trainer &host_trainer = *host_owned, &device_trainer = *device_owned;
  const HostBatch batch = RandomBatch(from_host, 9);
  float* images = nullptr;
  const size_t bytes = batch.images.size() * sizeof(float);
  ASSERT_EQ(cudaMalloc(&images, bytes), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(images, batch.images.data(), bytes, cudaMemcpyHostToDevice), cudaSuccess);
  Batch on_device =
      from_device.InputBatch(batch.images.data(), batch.labels.data(), from_device.batch_size());
  on_device.inputs[0] =
      core::Tensor(images, on_device.inputs[0].shape(), core::DType::kF32, core::Device::kCuda);
  for (int step = 0; step < 2; ++step) {
    host_trainer.TrainStep(
        from_host.InputBatch(batch.images.data(), batch.labels.data(), from_host.batch_size()));
    device_trainer.TrainStep(on_device);
  }
  // The same inputs: equal up to the device's own run-to-run rounding, if any
  // (other images would move them by orders of magnitude more).
  EXPECT_LT(RelativeError(from_device.ParametersToHost(), from_host.ParametersToHost()), 1e-6);
  EXPECT_LT(RelativeError(from_device.BuffersToHost(), from_host.BuffersToHost()), 1e-6);
  EXPECT_EQ(from_host.EvaluateBatch(batch.images.data(), batch.labels.data(), 3),
            from_device.EvaluateBatch(images, batch.labels.data(), 3, core::Device::kCuda));
  EXPECT_LT(
      RelativeError(from_device.ToHost(from_device.logits()), from_host.ToHost(from_host.logits())),
      1e-5);
  cudaFree(images);
}
#endif

TEST(ResNetGpuTest, CheckpointMovesBetweenDevices) {
  SKIP_WITHOUT_DEVICE();
  ResNet gpu_model(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 2);
  gpu_model.Initialize(13);
  const HostBatch batch = RandomBatch(gpu_model, 14);
  gpu_model.ForwardTrain(batch.images.data(), batch.labels.data(), 0.1f);  // running stats move
  const std::string path =
      (std::filesystem::temp_directory_path() / "resnet_gpu_test.safetensors").string();
  ASSERT_TRUE(gpu_model.SaveSafetensors(path).ok());
  ResNet cpu_model(test::TwinModel(core::Layout::kNHWC, core::Device::kCpu), 2);
  ASSERT_TRUE(cpu_model.LoadSafetensors(path).ok());
  EXPECT_EQ(cpu_model.ParametersToHost(), gpu_model.ParametersToHost());
  EXPECT_EQ(cpu_model.BuffersToHost(), gpu_model.BuffersToHost());
  EXPECT_EQ(cpu_model.num_batches_tracked(), 1);
  ResNet back(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 2);
  ASSERT_TRUE(back.LoadSafetensors(path).ok());
  EXPECT_EQ(back.BuffersToHost(), gpu_model.BuffersToHost());
  std::filesystem::remove(path);
}

// A world of two whose collectives do nothing (both "ranks" would hold the
// same values, so averaging is the identity) but record what was sent, and
// when relative to the backward pass.
class RecordingCommunicator final : public dist::Communicator {
 public:
  int rank() const override { return 0; }
  int world_size() const override { return 2; }
  void AllReduceSum(float* data, int64_t count) override { calls.push_back({data, count}); }
  void AllReduceAverage(float* data, int64_t count) override { calls.push_back({data, count}); }
  void Broadcast(float*, int64_t, int) override {}
  void AllToAll(const void*, std::span<const int64_t>, void*, std::span<const int64_t>) override {
    ADD_FAILURE() << "ResNet exchanges no blocks";
  }
  void AllGather(const void*, void*, int64_t) override { ADD_FAILURE() << "ResNet gathers none"; }
  void ReduceScatterSum(const float*, float*, int64_t) override {
    ADD_FAILURE() << "ResNet scatters none";
  }
  void Barrier() override {}
  struct Call {
    float* data;
    int64_t count;
  };
  std::vector<Call> calls;
};

TEST(ResNetGpuTrainerTest, BucketsAreSentDuringBackwardInArenaOrderFromTheEnd) {
  SKIP_WITHOUT_DEVICE();
  ResNet model(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 4);
  model.Initialize(2);
  ResNet reference(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 4);
  reference.Initialize(2);
  RecordingCommunicator comm;
  auto single = dist::MakeSingleProcessCommunicator();
  // Small buckets: many of them, so several complete before the stem.
  const test::ResnetRecipe recipe{
      .base_lr = 1.0, .warmup_epochs = 1, .decay_epochs = 41, .weight_decay = 1e-4};
  const ops::OwnedStream comm_stream = ops::OwnedStream::NonBlocking();
  {
    const auto owned =
        test::ResnetTrainer(model, recipe, 2, comm, {.bucket_elements = 4096}, comm_stream.get());
    const auto reference_owned =
        test::ResnetTrainer(reference, recipe, 2, *single, {.bucket_elements = 4096});
    train::Trainer &trainer = *owned, &reference_trainer = *reference_owned;
    const HostBatch batch = RandomBatch(model, 3);
    trainer.TrainStep(
        model.InputBatch(batch.images.data(), batch.labels.data(), model.batch_size()));
    reference_trainer.TrainStep(
        reference.InputBatch(batch.images.data(), batch.labels.data(), reference.batch_size()));
    const std::vector<dist::Bucket> buckets =
        dist::PlanBuckets(static_cast<int64_t>(model.gradients().size()), 4096);
    ASSERT_GT(buckets.size(), 3u);
    // Every bucket once, from the end of the arena, then the loss.
    ASSERT_EQ(comm.calls.size(), buckets.size() + 1);
    for (size_t i = 0; i < buckets.size(); ++i) {
      EXPECT_EQ(comm.calls[i].data, model.gradients().data() + buckets[i].begin) << i;
      EXPECT_EQ(comm.calls[i].count, buckets[i].end - buckets[i].begin) << i;
    }
    EXPECT_EQ(comm.calls.back().data, model.loss_tensor().f32());
    // With identity collectives the result equals the single-process step
    // (up to cuDNN's algorithm-level nondeterminism): the extra stream and
    // events let no optimizer update run before its gradients.
    EXPECT_LT(RelativeError(model.ParametersToHost(), reference.ParametersToHost()), 1e-6);
    EXPECT_LT(RelativeError(trainer.OptimizerStateToHost("momentum"),
                            reference_trainer.OptimizerStateToHost("momentum")),
              1e-5);
  }
}

// Host-only: the hook reports offsets that only decrease and end at 0, and
// each report covers every gradient that Backward has written.
TEST(ResNetHookTest, GradientsReadyOffsetsDecreaseToZero) {
  ResNet model(test::TwinModel(core::Layout::kNCHW, core::Device::kCpu), 2);
  const HostBatch batch = RandomBatch(model, 1);
  model.ForwardTrain(batch.images.data(), batch.labels.data(), 0.1f);
  std::vector<int64_t> offsets;
  const std::vector<TensorSlice> slices = model.slices();
  std::fill(model.gradients().begin(), model.gradients().end(), std::nanf(""));
  bool complete = true;
  model.set_gradients_ready_hook([&](int64_t from) {
    offsets.push_back(from);
    // Every parameter at or after `from` has its gradient written (no NaN).
    for (const TensorSlice& s : slices)
      if (s.offset >= from)
        for (int64_t i = s.offset; i < s.offset + s.numel; ++i)
          complete = complete && !std::isnan(model.gradients()[i]);
  });
  model.Backward();
  EXPECT_TRUE(complete);
  ASSERT_EQ(offsets.size(), 1u + 4u + 1u);  // fc, four blocks, stem
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_LT(offsets[i], offsets[i - 1]);
  EXPECT_EQ(offsets.back(), 0);
}

}  // namespace
}  // namespace mlperf::models
