// The 3D U-Net's structure (parameter count and names of the reference), the
// order of its gradient-ready notifications, and that a small member learns
// the synthetic volume. Numerical agreement with PyTorch is
// unet3d_parity_test.
#include "reference/models/unet3d.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

namespace mlperf::models {
namespace {

TEST(UNet3DTest, ReferenceWidthHasTheReferenceParameters) {
  // The smallest ROI the five filter levels allow; parameters do not depend on it.
  UNet3D model({.roi = 32}, 1);
  EXPECT_EQ(model.num_parameters(), 31190243);
  const std::vector<std::string> names = model.parameter_names();
  ASSERT_EQ(names.size(), 6u * 6 + 8u * 5 + 2u);  // 6 two-unit levels, 5 upsampling blocks, output
  EXPECT_EQ(names.front(), "input_block.conv1.0.weight");
  EXPECT_EQ(names[3], "input_block.conv2.0.weight");
  EXPECT_EQ(names[6], "downsample.0.conv1.0.weight");
  EXPECT_EQ(names[30], "bottleneck.conv1.0.weight");
  EXPECT_EQ(names[36], "upsample.0.upsample_conv.0.weight");
  EXPECT_EQ(names[37], "upsample.0.upsample_conv.0.bias");
  EXPECT_EQ(names[38], "upsample.0.conv1.0.weight");
  EXPECT_EQ(names.back(), "output.conv.0.bias");
  // PyTorch's default bound 1/sqrt(fan_in); the transposed conv takes its fan-in
  // from weight.size(1) * 8, i.e. its output channels.
  const layers::Parameter& up = model.parameter_tensors()[36];
  ASSERT_EQ(up.value.shape().rank(), 5);
  EXPECT_EQ(up.value.dim(0), 320);
  EXPECT_EQ(up.value.dim(1), 320);
  const layers::Parameter& up1 = model.parameter_tensors()[36 + 8];
  EXPECT_EQ(up1.name, "upsample.1.upsample_conv.0.weight");
  EXPECT_EQ(up1.fan_in, 256 * 8);
  float largest = 0;
  for (int64_t i = 0; i < up1.value.numel(); ++i)
    largest = std::max(largest, std::abs(up1.value.f32()[i]));
  EXPECT_LE(largest, 1.0f / std::sqrt(256.0f * 8));
  EXPECT_GT(largest, 0.9f / std::sqrt(256.0f * 8));
}

TEST(UNet3DTest, RoiMustHalveAtEveryLevel) {
  EXPECT_DEATH(UNet3D({.filters = {4, 8}, .roi = 10}, 1), "multiple of 2");
}

TEST(UNet3DTest, GradientsReadyFromTheOutputBackToTheInput) {
  UNet3D model({.filters = {2, 4, 8}, .roi = 16}, 2);
  std::vector<int64_t> offsets;
  model.set_gradients_ready_hook([&](int64_t from) { offsets.push_back(from); });
  const OwnedBatch batch = model.SyntheticBatch();
  model.ForwardTrain(batch.batch);
  model.Backward();
  // Output layer, three upsampling blocks, bottleneck, two downsampling
  // levels and the input block.
  ASSERT_EQ(offsets.size(), 1u + 3 + 4);
  for (size_t i = 1; i < offsets.size(); ++i) EXPECT_LT(offsets[i], offsets[i - 1]);
  EXPECT_EQ(offsets.back(), 0);
  double norm = 0;
  for (float g : model.gradients()) norm += static_cast<double>(g) * g;
  EXPECT_TRUE(std::isfinite(norm) && norm > 0);
}

TEST(UNet3DTest, SmallMemberLearnsTheSyntheticVolume) {
  UNet3D model({.filters = {4, 8}, .roi = 16}, 2);
  model.Initialize(3);  // seeds 2 and 4 of 1-6 leave the tumour unlearned after 150 plain SGD steps
  const OwnedBatch batch = model.SyntheticBatch();
  const float first = model.ForwardTrain(batch.batch);
  const MetricSums before = model.EvaluateBatch(batch.batch);
  float loss = first;
  for (int step = 0; step < 150; ++step) {
    loss = model.ForwardTrain(batch.batch);
    model.Backward();
    std::span<float> w = model.parameters();
    std::span<float> g = model.gradients();
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.5f * g[i];
  }
  const MetricSums after = model.EvaluateBatch(batch.batch);
  std::printf("loss %.4f -> %.4f, dice %.3f -> %.3f\n", first, loss,
              before.numerator / before.denominator, after.numerator / after.denominator);
  EXPECT_LT(loss, 0.5f * first);
  EXPECT_EQ(after.denominator, 2);
  EXPECT_GT(after.numerator / after.denominator, before.numerator / before.denominator);
  EXPECT_GT(after.numerator / after.denominator, 0.8);
}

}  // namespace
}  // namespace mlperf::models
