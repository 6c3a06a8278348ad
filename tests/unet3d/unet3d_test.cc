// The 3D U-Net's structure (parameter count and names of the reference), the
// order of its gradient-ready notifications, and that a small member learns
// the synthetic volume. Numerical agreement with PyTorch is
// unet3d_parity_test.
#include "reference/models/unet3d.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <vector>

#include "reference/models/sliding_window.h"

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

// The mean DICE of the batch's volumes, each evaluated as a whole case.
double MeanDice(UNet3D& model, const OwnedBatch& batch) {
  const int64_t r = model.config().roi, n = batch.batch.count;
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    const Batch one{.inputs = {core::Tensor(batch.batch.inputs[0].f32() + i * r * r * r,
                                            {1, 1, r, r, r}, core::DType::kF32),
                               core::Tensor(batch.batch.inputs[1].as<int32_t>() + i * r * r * r,
                                            {1, r, r, r}, core::DType::kI32)},
                    .count = 1};
    const MetricSums s = model.EvaluateBatch(one);
    EXPECT_EQ(s.denominator, 1);
    sum += s.numerator;
  }
  return sum / static_cast<double>(n);
}

TEST(UNet3DTest, SmallMemberLearnsTheSyntheticVolume) {
  UNet3D model({.filters = {4, 8}, .roi = 16}, 2);
  model.Initialize(3);  // seeds 2 and 4 of 1-6 leave the tumour unlearned after 150 plain SGD steps
  const OwnedBatch batch = model.SyntheticBatch();
  const float first = model.ForwardTrain(batch.batch);
  const double before = MeanDice(model, batch);
  float loss = first;
  for (int step = 0; step < 150; ++step) {
    loss = model.ForwardTrain(batch.batch);
    model.Backward();
    std::span<float> w = model.parameters();
    std::span<float> g = model.gradients();
    for (size_t i = 0; i < w.size(); ++i) w[i] -= 0.5f * g[i];
  }
  const double after = MeanDice(model, batch);
  std::printf("loss %.4f -> %.4f, dice %.3f -> %.3f\n", first, loss, before, after);
  EXPECT_LT(loss, 0.5f * first);
  EXPECT_GT(after, before);
  EXPECT_GT(after, 0.8);
}

// Known label pairs on a 2 x 2 x 4 region inside a 4 x 4 x 4 label volume:
// kidney predicted on 4 voxels, 3 of them right, of 5 true kidney voxels:
// 2*3/(5+4); tumour neither predicted nor present: (0+1e-6)/(0+1e-6) = 1.
TEST(CaseDiceTest, KnownPairs) {
  VolumeLogits v{.begin = {1, 2, 0}, .shape = {2, 2, 4}, .classes = 3};
  const int64_t voxels = 16;
  v.logits.assign(3 * voxels, 0.0f);
  for (int64_t q : {0, 1, 2, 9}) v.logits[1 * voxels + q] = 1.0f;  // kidney predicted
  std::vector<uint8_t> labels(64, 0);
  auto at = [](int64_t d, int64_t h, int64_t w) { return (d * 4 + h) * 4 + w; };
  // Region voxel q = (d, h, w) of the region maps to (d + 1, h + 2, w).
  for (auto [d, h, w] :
       {std::array<int64_t, 3>{0, 0, 0}, {0, 0, 1}, {0, 0, 2}, {1, 1, 3}, {1, 1, 2}})
    labels[at(d + 1, h + 2, w)] = 1;
  labels[at(0, 0, 0)] = 2;  // outside the region: not scored
  const std::vector<double> dice =
      CaseDice(v, core::Tensor(labels.data(), {1, 4, 4, 4}, core::DType::kU8));
  ASSERT_EQ(dice.size(), 2u);
  EXPECT_NEAR(dice[0], (6.0 + 1e-6) / (9.0 + 1e-6), 1e-12);
  EXPECT_DOUBLE_EQ(dice[1], 1.0);
  // Ties go to the lower class, as torch.argmax: all-equal logits predict background.
  v.logits.assign(3 * voxels, 0.5f);
  EXPECT_NEAR(CaseDice(v, core::Tensor(labels.data(), {4, 4, 4}, core::DType::kU8))[0],
              1e-6 / (5.0 + 1e-6), 1e-12);
}

TEST(GaussianImportanceTest, CubeRootOfAGaussianWithMaximumOne) {
  const std::vector<float> g = GaussianImportance(8);
  ASSERT_EQ(g.size(), 512u);
  // Centre voxels (3 and 4 on every axis) share the maximum.
  EXPECT_FLOAT_EQ(g[(3 * 8 + 3) * 8 + 3], 1.0f);
  EXPECT_FLOAT_EQ(g[(4 * 8 + 4) * 8 + 4], 1.0f);
  // Corner: exp(-0.5 * (3.5 / 1)^2) per axis, cube root of the product, over the centre's.
  const double axis = std::exp(-0.5 * 3.5 * 3.5), centre = std::exp(-0.5 * 0.5 * 0.5);
  EXPECT_NEAR(g[0], std::cbrt(std::pow(axis, 3)) / std::cbrt(std::pow(centre, 3)), 1e-7);
}

}  // namespace
}  // namespace mlperf::models
