// BERT on a CUDA device against the same model on the CPU (the oracle):
// identical initial weights, then both losses, the masked-LM logits and
// every gradient with dropout on (both backends draw the same Philox masks),
// LAMB trainer steps under the BERT schedule, and the evaluation sums agree
// within fp32 tolerances (cuBLAS sums in other orders than the CPU's GEMMs).
// Skips without a device (and in builds without CUDA).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/models/bert.h"
#include "reference/trainer/trainer.h"
#include "tests/core/test_util.h"

namespace mlperf::models {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device (or a build without CUDA)"

using testing::RelativeError;
using testing::SliceOf;

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

TEST(BertGpuTest, LossesLogitsAndEveryGradientMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  Bert cpu_model(Small(core::Device::kCpu), 4), gpu_model(Small(core::Device::kCuda), 4);
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
  const std::vector<float> g_cpu = cpu_model.GradientsToHost(), g_gpu = gpu_model.GradientsToHost();
  const std::vector<TensorSlice> slices = cpu_model.slices();
  const std::vector<std::string> names = cpu_model.parameter_names();
  for (size_t k = 0; k < slices.size(); ++k)
    EXPECT_LT(RelativeError(SliceOf(g_gpu, slices[k]), SliceOf(g_cpu, slices[k])), 1e-3)
        << names[k];
}

TEST(BertGpuTest, LambStepsAndEvaluationMatchTheCpu) {
  SKIP_WITHOUT_DEVICE();
  Bert cpu_model(Small(core::Device::kCpu), 4), gpu_model(Small(core::Device::kCuda), 4);
  cpu_model.Initialize(5);
  gpu_model.Initialize(5);
  const train::TrainerConfig recipe = {.optimizer = train::OptimizerKind::kLamb,
                                       .global_batch_size = 4,
                                       .base_lr = 1e-3,
                                       .poly_power = 1.0,
                                       .weight_decay = 0.01,
                                       .schedule = train::ScheduleKind::kBert,
                                       .train_steps = 10,
                                       .warmup_steps = 2,
                                       .start_warmup_step = -1};
  auto comm_cpu = dist::MakeSingleProcessCommunicator();
  auto comm_gpu = dist::MakeSingleProcessCommunicator();
  train::Trainer cpu_trainer(cpu_model, recipe, *comm_cpu);
  train::Trainer gpu_trainer(gpu_model, recipe, *comm_gpu);
  const OwnedBatch batch = cpu_model.SyntheticBatch();
  for (int step = 1; step <= 3; ++step) {
    const float loss_cpu = cpu_trainer.TrainStep(batch.batch);
    const float loss_gpu = gpu_trainer.TrainStep(batch.batch);
    EXPECT_NEAR(loss_gpu, loss_cpu, 1e-3 * std::abs(loss_cpu)) << "step " << step;
  }
  EXPECT_LT(RelativeError(gpu_model.ParametersToHost(), cpu_model.ParametersToHost()), 1e-4);
  EXPECT_LT(RelativeError(gpu_trainer.SecondMomentToHost(), cpu_trainer.SecondMomentToHost()),
            1e-3);
  const MetricSums cpu_sums = cpu_model.EvaluateBatch(batch.batch);
  const MetricSums gpu_sums = gpu_model.EvaluateBatch(batch.batch);
  EXPECT_EQ(gpu_sums.denominator, cpu_sums.denominator);
  EXPECT_NEAR(gpu_sums.numerator, cpu_sums.numerator, 1.0);  // one near-tie may flip
}

}  // namespace
}  // namespace mlperf::models
