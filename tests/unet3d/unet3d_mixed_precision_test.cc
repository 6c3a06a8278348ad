// The 3D U-Net under bf16 and fp16 on the CPU: one pass in NCDHW against the
// same in NDHWC. The two round at the same points and differ only in the
// order of their sums, so their difference is the yardstick of the GPU's
// comparison with the CPU (tests/unet3d/one_step.h). The rounding itself
// must move the logits further from fp32's than the two layouts are apart.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "reference/kernels/precision.h"
#include "tests/core/test_util.h"
#include "tests/unet3d/one_step.h"

namespace mlperf::models {
namespace {

using testing::RelativeError;

class UNet3DMixedPrecisionTest : public ::testing::TestWithParam<core::DType> {};

TEST_P(UNet3DMixedPrecisionTest, OneStepAgreesAcrossLayouts) {
  const test::UNetStep fp32 = test::RunUNetStep(core::Layout::kNCDHW, core::Device::kCpu);
  const ops::PrecisionScope scope(GetParam());
  const test::UNetStep first = test::RunUNetStep(core::Layout::kNCDHW, core::Device::kCpu);
  const test::UNetStep last = test::RunUNetStep(core::Layout::kNDHWC, core::Device::kCpu);
  ASSERT_TRUE(std::isfinite(first.loss) && std::isfinite(last.loss));
  const double loss = std::fabs(last.loss - first.loss) / std::fabs(first.loss);
  const double logits = RelativeError(last.logits, first.logits);
  const double gradients = RelativeError(last.gradients, first.gradients);
  const double from_fp32 = RelativeError(first.logits, fp32.logits);
  std::printf("%s across layouts: loss %.2e, logits %.2e, gradients %.2e; logits from fp32: %.2e\n",
              std::string(ops::PrecisionName(GetParam())).c_str(), loss, logits, gradients,
              from_fp32);
  EXPECT_LT(loss, test::kUNetReducedLossTolerance);
  EXPECT_LT(logits, test::kUNetReducedLogitsTolerance);
  EXPECT_LT(gradients, test::kUNetReducedGradientTolerance);
  EXPECT_GT(from_fp32, logits);
}

INSTANTIATE_TEST_SUITE_P(Precisions, UNet3DMixedPrecisionTest,
                         ::testing::Values(core::DType::kBF16, core::DType::kF16),
                         [](const ::testing::TestParamInfo<core::DType>& info) {
                           return std::string(ops::PrecisionName(info.param));
                         });

}  // namespace
}  // namespace mlperf::models
