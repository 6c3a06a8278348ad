// BERT on a CUDA device against the same model on the CPU (the oracle):
// identical initial weights, then both losses, the masked-LM logits and
// every gradient with dropout on (both backends draw the same Philox masks),
// LAMB trainer steps under the BERT schedule, and the evaluation sums agree
// within fp32 tolerances (cuBLAS sums in other orders than the CPU's GEMMs);
// and one pass in bf16 and fp16, with activations stored in fp32 or in the
// precision's type, against the CPU's rounding points; recorded steps, in
// fp32 and in bf16 with typed storage, against steps as queued. Skips
// without a device (and in builds without CUDA).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/bert.h"
#include "reference/trainer/trainer.h"
#include "tests/bert/lamb_trainer.h"
#include "tests/core/test_util.h"

namespace mlperf::models {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device (or a build without CUDA)"

using testing::RelativeError;

BertConfig Small(core::Device device) {
  return {.vocab_size = 211,
          .hidden = 64,
          .layers = 2,
          .heads = 4,
          .intermediate = 256,
          .max_positions = 64,
          .seq_len = 48,
          .max_predictions = 7,
          .device = device};
}

// LAMB under the BERT schedule, 10 steps.
benchmarks::bert::Recipe Lamb(int64_t warmup_steps) {
  return {.base_lr = 1e-3,
          .train_steps = 10,
          .warmup_steps = warmup_steps,
          .start_warmup_step = -1,
          .weight_decay = 0.01};
}

void ExpectStepMatchesTheCpu(int64_t packed_sequences) {
  BertConfig cpu = Small(core::Device::kCpu), gpu = Small(core::Device::kCuda);
  cpu.packed_sequences = gpu.packed_sequences = packed_sequences;
  Bert cpu_model(cpu, 4), gpu_model(gpu, 4);
  cpu_model.Initialize(3);
  gpu_model.Initialize(3);
  ASSERT_EQ(cpu_model.ParametersToHost(), gpu_model.ParametersToHost());
  const OwnedBatch batch = cpu_model.SyntheticBatch();
  const float loss_cpu = cpu_model.ForwardTrain(batch.batch);
  const float loss_gpu = gpu_model.ForwardTrain(batch.batch);
  EXPECT_TRUE(std::isfinite(loss_gpu));
  EXPECT_NEAR(loss_gpu, loss_cpu, 1e-4 * std::abs(loss_cpu));
  EXPECT_LT(RelativeError(gpu_model.ToHost(gpu_model.mlm_logits()),
                          cpu_model.ToHost(cpu_model.mlm_logits())),
            1e-4);
  cpu_model.Backward();
  gpu_model.Backward();
  testing::ExpectGradientsClose(gpu_model.GradientsToHost(), cpu_model.GradientsToHost(),
                                cpu_model.slices(), cpu_model.parameter_names(), 1e-3, 1e-3);
}

TEST(BertGpuTest, LossesLogitsAndEveryGradientMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  ExpectStepMatchesTheCpu(0);
}

// Packed rows (two sequences a row, the sequence mask on the device).
TEST(BertGpuTest, PackedRowsMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  ExpectStepMatchesTheCpu(3);
}

// The step recorded as a CUDA graph (TrainerConfig::cuda_graph) and
// replayed, against the same steps run as queued: new dropout masks each
// replay (the step counter on the device), LAMB's step count and the
// schedule's rate on the device. Under the precision and storage in force.
void ExpectRecordedStepsMatchStepsAsQueued() {
  Bert queued_model(Small(core::Device::kCuda), 4), recorded_model(Small(core::Device::kCuda), 4);
  queued_model.Initialize(9);
  recorded_model.Initialize(9);
  const benchmarks::bert::Recipe recipe = Lamb(/*warmup_steps=*/3);
  auto comm = dist::MakeSingleProcessCommunicator();
  const auto queued_owned = test::LambTrainer(queued_model, recipe, *comm);
  const auto recorded_owned =
      test::LambTrainer(recorded_model, recipe, *comm, {.cuda_graph = true});
  train::Trainer &queued = *queued_owned, &recorded = *recorded_owned;
  const OwnedBatch batch = queued_model.SyntheticBatch();
  // Steps as queued draw a new mask each; a replay repeating one would part
  // the losses.
  for (int step = 0; step < 6; ++step) {
    const float loss_queued = queued.TrainStep(batch.batch);
    const float loss_recorded = recorded.TrainStep(batch.batch);
    EXPECT_NEAR(loss_recorded, loss_queued, 1e-5 * std::abs(loss_queued)) << "step " << step;
  }
  EXPECT_EQ(recorded.replayed_steps(), 5);
  EXPECT_EQ(recorded_model.num_batches_tracked(), 6);
  EXPECT_LT(RelativeError(recorded_model.ParametersToHost(), queued_model.ParametersToHost()),
            1e-5);
  EXPECT_LT(RelativeError(recorded.OptimizerStateToHost("second_moment"),
                          queued.OptimizerStateToHost("second_moment")),
            1e-5);
}

TEST(BertGpuTest, RecordedStepsMatchStepsAsQueued) {
  SKIP_WITHOUT_DEVICE();
  ExpectRecordedStepsMatchStepsAsQueued();
}

// The same in bf16 with the activations stored in it (the typed attention
// core and dense layers inside the recording).
TEST(BertGpuTest, RecordedTypedBf16StepsMatchStepsAsQueued) {
  SKIP_WITHOUT_DEVICE();
  const ops::PrecisionScope bf16(core::DType::kBF16);
  const ops::TypedActivationsScope typed(true);
  ASSERT_EQ(Bert(Small(core::Device::kCuda), 4).activation_storage(), core::DType::kBF16);
  ExpectRecordedStepsMatchStepsAsQueued();
}

TEST(BertGpuTest, LambStepsAndEvaluationMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  Bert cpu_model(Small(core::Device::kCpu), 4), gpu_model(Small(core::Device::kCuda), 4);
  cpu_model.Initialize(5);
  gpu_model.Initialize(5);
  const benchmarks::bert::Recipe recipe = Lamb(/*warmup_steps=*/2);
  auto comm_cpu = dist::MakeSingleProcessCommunicator();
  auto comm_gpu = dist::MakeSingleProcessCommunicator();
  const auto cpu_owned = test::LambTrainer(cpu_model, recipe, *comm_cpu);
  const auto gpu_owned = test::LambTrainer(gpu_model, recipe, *comm_gpu);
  train::Trainer &cpu_trainer = *cpu_owned, &gpu_trainer = *gpu_owned;
  const OwnedBatch batch = cpu_model.SyntheticBatch();
  for (int step = 1; step <= 3; ++step) {
    const float loss_cpu = cpu_trainer.TrainStep(batch.batch);
    const float loss_gpu = gpu_trainer.TrainStep(batch.batch);
    EXPECT_NEAR(loss_gpu, loss_cpu, 1e-3 * std::abs(loss_cpu)) << "step " << step;
  }
  EXPECT_LT(RelativeError(gpu_model.ParametersToHost(), cpu_model.ParametersToHost()), 1e-4);
  EXPECT_LT(RelativeError(gpu_trainer.OptimizerStateToHost("second_moment"),
                          cpu_trainer.OptimizerStateToHost("second_moment")),
            1e-3);
  const MetricSums cpu_sums = cpu_model.EvaluateBatch(batch.batch);
  const MetricSums gpu_sums = gpu_model.EvaluateBatch(batch.batch);
  EXPECT_EQ(gpu_sums.denominator, cpu_sums.denominator);
  EXPECT_NEAR(gpu_sums.numerator, cpu_sums.numerator, 1.0);  // one near-tie may flip
}

// One training forward and backward of the small model on `device`, under
// the precision in force.
struct Pass {
  float loss = 0.0f;
  std::vector<float> logits, gradients;
  core::DType stored = core::DType::kF32;
};

Pass OnePass(core::Device device) {
  Bert model(Small(device), 4);
  model.Initialize(3);
  const OwnedBatch batch = model.SyntheticBatch();
  Pass pass;
  pass.loss = model.ForwardTrain(batch.batch);
  pass.logits = model.ToHost(model.mlm_logits());
  model.Backward();
  pass.gradients = model.GradientsToHost();
  pass.stored = model.activation_storage();
  return pass;
}

// (precision, typed storage on the device)
class BertReducedPrecisionTest : public ::testing::TestWithParam<std::tuple<core::DType, bool>> {};

// The device rounds where the CPU does (kernels/precision.h), whether it
// stores the activations in fp32 or in the precision's type: it stays closer
// to the CPU in that precision than the rounding moves the CPU from fp32.
TEST_P(BertReducedPrecisionTest, OnePassMatchesTheCpu) {
  SKIP_WITHOUT_DEVICE();
  const auto [precision, typed] = GetParam();
  const Pass fp32 = OnePass(core::Device::kCpu);
  const ops::PrecisionScope scope(precision);
  const Pass cpu = OnePass(core::Device::kCpu);
  const ops::TypedActivationsScope storage(typed);
  const Pass gpu = OnePass(core::Device::kCuda);
  ASSERT_EQ(gpu.stored, typed ? precision : core::DType::kF32);
  ASSERT_TRUE(std::isfinite(gpu.loss));
  const double logits_rounding = RelativeError(cpu.logits, fp32.logits);
  const double gradients_rounding = RelativeError(cpu.gradients, fp32.gradients);
  ASSERT_GT(gradients_rounding, 0.0);
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-3 * std::abs(cpu.loss));
  EXPECT_LT(RelativeError(gpu.logits, cpu.logits), logits_rounding / 2);
  EXPECT_LT(RelativeError(gpu.gradients, cpu.gradients), gradients_rounding / 2);
}

INSTANTIATE_TEST_SUITE_P(
    PrecisionAndStorage, BertReducedPrecisionTest,
    ::testing::Combine(::testing::Values(core::DType::kBF16, core::DType::kF16), ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<core::DType, bool>>& info) {
      return std::string(ops::PrecisionName(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "Typed" : "Fp32Stored");
    });

}  // namespace
}  // namespace mlperf::models
