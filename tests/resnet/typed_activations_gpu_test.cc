// ResNet with its activations stored in bf16/fp16 on a CUDA device (ops::
// TypedActivationsScope; opt-in until this has run on a GPU): the storage
// type, and one training step against the CPU twin, which keeps fp32
// storage rounded at the same points, and against fp32 storage on the
// device. The tolerances come from two CPU layouts (random_batch.h). Label
// gpu; skips without a device.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>

#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/models/resnet.h"
#include "tests/core/test_util.h"
#include "tests/resnet/random_batch.h"

namespace mlperf::models {
namespace {

#define SKIP_WITHOUT_DEVICE() \
  if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device (or a build without CUDA)"

using testing::RelativeError;

TEST(TypedActivationsTest, StoredInThePrecisionOnlyWhenOn) {
  SKIP_WITHOUT_DEVICE();
  for (core::DType precision : {core::DType::kBF16, core::DType::kF16}) {
    const ops::PrecisionScope scope(precision);
    for (bool typed : {true, false}) {
      const ops::TypedActivationsScope storage(typed);
      ResNet model(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 2);
      for (int s = 0; s < 4; ++s)
        EXPECT_EQ(model.stage_output(s).dtype(), typed ? precision : core::DType::kF32);
    }
  }
  const ops::TypedActivationsScope storage(true);  // fp32 training stores fp32
  ResNet model(test::TwinModel(core::Layout::kNHWC, core::Device::kCuda), 2);
  EXPECT_EQ(model.stage_output(3).dtype(), core::DType::kF32);
}

// (precision, typed storage on the device)
class TypedStepTest : public ::testing::TestWithParam<std::tuple<core::DType, bool>> {};

TEST_P(TypedStepTest, OneStepMatchesTheCpu) {
  SKIP_WITHOUT_DEVICE();
  const auto [precision, typed] = GetParam();
  const ops::PrecisionScope scope(precision);
  const test::OneStep cpu = test::RunOneStep(core::Layout::kNHWC, core::Device::kCpu);
  const ops::TypedActivationsScope storage(typed);
  const test::OneStep gpu = test::RunOneStep(core::Layout::kNHWC, core::Device::kCuda);
  ASSERT_EQ(gpu.stored, typed ? precision : core::DType::kF32);
  ASSERT_TRUE(std::isfinite(gpu.loss));
  EXPECT_NEAR(gpu.loss, cpu.loss, 1e-3 * cpu.loss);
  EXPECT_LT(RelativeError(gpu.logits, cpu.logits), test::kReducedLogitsTolerance);
  EXPECT_LT(RelativeError(gpu.gradients, cpu.gradients), test::kReducedGradientTolerance);
}

TEST_P(TypedStepTest, TypedStorageMatchesFp32StorageOnTheDevice) {
  SKIP_WITHOUT_DEVICE();
  const auto [precision, typed] = GetParam();
  if (!typed) GTEST_SKIP() << "the pair is tested once, under typed = true";
  const ops::PrecisionScope scope(precision);
  test::OneStep fp32_storage, typed_storage;
  {
    const ops::TypedActivationsScope storage(false);
    fp32_storage = test::RunOneStep(core::Layout::kNHWC, core::Device::kCuda);
  }
  {
    const ops::TypedActivationsScope storage(true);
    typed_storage = test::RunOneStep(core::Layout::kNHWC, core::Device::kCuda);
  }
  EXPECT_NEAR(typed_storage.loss, fp32_storage.loss, 1e-3 * fp32_storage.loss);
  EXPECT_LT(RelativeError(typed_storage.logits, fp32_storage.logits),
            test::kReducedLogitsTolerance);
  EXPECT_LT(RelativeError(typed_storage.gradients, fp32_storage.gradients),
            test::kReducedGradientTolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Precisions, TypedStepTest,
    ::testing::Combine(::testing::Values(core::DType::kBF16, core::DType::kF16), ::testing::Bool()),
    [](const auto& info) {
      return std::string(ops::PrecisionName(std::get<0>(info.param))) +
             (std::get<1>(info.param) ? "Typed" : "Fp32Storage");
    });

}  // namespace
}  // namespace mlperf::models
