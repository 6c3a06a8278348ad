
// ResNet-50 v1.5 structure (parameter counts, stage shapes, padding), the
// whole network's gradient against central differences on a tiny member, and
// the safetensors round trip.
#include "reference/models/resnet.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "reference/core/philox.h"

namespace mlperf::models {
namespace {

// Counted from the architecture table (references.md 2.1), independently of
// the model's own bookkeeping.
int64_t ExpectedParameters(int64_t base, std::array<int, 4> blocks, int64_t classes) {
  int64_t total = 3 * 49 * base + 2 * base;  // stem conv + BN
  int64_t in = base;
  for (int s = 0; s < 4; ++s) {
    const int64_t m = base << s;
    for (int b = 0; b < blocks[s]; ++b) {
      total += in * m + 2 * m + 9 * m * m + 2 * m + m * 4 * m + 2 * 4 * m;
      if (b == 0) total += in * 4 * m + 2 * 4 * m;  // projection + BN
      in = 4 * m;
    }
  }
  return total + in * classes + classes;
}

std::vector<float> RandomImages(const ResNet& model, uint64_t seed) {
  std::vector<float> x(model.batch_size() * model.image_elements());
  for (size_t i = 0; i < x.size(); ++i) x[i] = 2.0f * core::PhiloxUniform(seed, 0, i) - 1.0f;
  return x;
}

std::vector<int32_t> RandomLabels(const ResNet& model, uint64_t seed) {
  std::vector<int32_t> y(model.batch_size());
  for (size_t i = 0; i < y.size(); ++i)
    y[i] = static_cast<int32_t>(core::PhiloxBits(seed, 1, i) % model.config().num_classes);
  return y;
}

TEST(ResNetTest, ResNet50HasTheReferenceParameterCountAndStageShapes) {
  ResNet model(ResNetConfig{}, /*batch_size=*/1);
  EXPECT_EQ(model.num_parameters(), 25'557'032);
  EXPECT_EQ(model.num_parameters(), ExpectedParameters(64, {3, 4, 6, 3}, 1000));
  const core::Shape expected[] = {
      {1, 64, 56, 56}, {1, 256, 56, 56}, {1, 512, 28, 28}, {1, 1024, 14, 14}, {1, 2048, 7, 7}};
  for (int s = 0; s <= 4; ++s)
    EXPECT_EQ(model.stage_output(s).shape(), expected[s]) << "stage " << s;
  EXPECT_EQ(model.logits().shape(), (core::Shape{1, 1000}));
  // 53 convolutions + 53 BNs (2 tensors each) + FC weight and bias.
  EXPECT_EQ(model.parameter_names().size(), 53u * 3 + 2);
  EXPECT_EQ(model.parameter_names().front(), "conv1.weight");
  EXPECT_EQ(model.parameter_names().back(), "fc.bias");
}

TEST(ResNetTest, SmallMembersCountTheirParameters) {
  for (int64_t width : {8, 16}) {
    const ResNetConfig config{
        .base_width = width, .blocks = {1, 2, 1, 1}, .num_classes = 10, .image_size = 32};
    ResNet model(config, 2);
    EXPECT_EQ(model.num_parameters(), ExpectedParameters(width, config.blocks, 10)) << width;
    EXPECT_EQ(model.stage_output(4).shape(), (core::Shape{2, 32 * width, 1, 1}));
  }
}

// ||a - b|| / ||b|| over two flat views.
double NormError(std::span<const float> a, std::span<const float> b) {
  double diff = 0.0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    diff += (static_cast<double>(a[i]) - b[i]) * (static_cast<double>(a[i]) - b[i]);
    scale += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(diff / scale);
}

std::span<const float> View(const core::Tensor& t) {
  return {t.f32(), static_cast<size_t>(t.numel())};
}

// The layout is one configuration switch: the same weights and batch give
// the same logits, loss, gradients and running statistics in NHWC as in NCHW
// (up to summation order).
TEST(ResNetTest, NhwcMatchesNchw) {
  ResNetConfig config{.base_width = 8,
                      .blocks = {1, 2, 1, 1},
                      .num_classes = 10,
                      .image_size = 48,
                      .layout = core::Layout::kNCHW};
  ResNet nchw(config, 4);
  config.layout = core::Layout::kNHWC;
  ResNet nhwc(config, 4);
  EXPECT_EQ(nhwc.stage_output(1).shape(), (core::Shape{4, 12, 12, 32}));
  EXPECT_EQ(nhwc.stage_output(1).layout(), core::Layout::kNHWC);
  nchw.Initialize(31);
  nhwc.Initialize(31);
  ASSERT_TRUE(
      std::equal(nchw.parameters().begin(), nchw.parameters().end(), nhwc.parameters().begin()));
  const std::vector<float> x = RandomImages(nchw, 32);
  const std::vector<int32_t> y = RandomLabels(nchw, 33);
  std::vector<float> x_nhwc(x.size());
  const int64_t s = 48 * 48;
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t p = 0; p < s; ++p) x_nhwc[(n * s + p) * 3 + c] = x[(n * 3 + c) * s + p];

  const int64_t correct = nchw.EvaluateBatch(x.data(), y.data(), 4);
  EXPECT_EQ(nhwc.EvaluateBatch(x_nhwc.data(), y.data(), 4), correct);
  EXPECT_LT(NormError(View(nhwc.logits()), View(nchw.logits())), 1e-5);

  const float loss = nchw.ForwardTrain(x.data(), y.data(), 0.1f);
  EXPECT_NEAR(nhwc.ForwardTrain(x_nhwc.data(), y.data(), 0.1f), loss, 1e-5 * loss);
  EXPECT_LT(NormError(View(nhwc.logits()), View(nchw.logits())), 1e-5);
  EXPECT_LT(NormError(nhwc.buffers(), nchw.buffers()), 1e-5);
  nchw.Backward();
  nhwc.Backward();
  double worst = 0.0;
  for (size_t k = 0; k < nchw.parameter_tensors().size(); ++k) {
    const double e =
        NormError(View(nhwc.parameter_tensors()[k].grad), View(nchw.parameter_tensors()[k].grad));
    EXPECT_LT(e, 1e-3) << nchw.parameter_tensors()[k].name;
    worst = std::max(worst, e);
  }
  std::printf("NHWC vs NCHW: worst gradient error %.1e\n", worst);
}

TEST(ResNetTest, PaddingModesDifferOnlyInWhereStridedWindowsPad) {
  // TF "same": a 3x3/2 on an even size pads only at the end.
  const ConvGeometry tf =
      layers::Conv2dPadded(1, 64, 56, 56, 64, 3, 2, layers::PaddingMode::kTfSame);
  EXPECT_EQ(tf.pad_begin[1], 0);
  EXPECT_EQ(tf.pad_end[1], 1);
  const ConvGeometry torch =
      layers::Conv2dPadded(1, 64, 56, 56, 64, 3, 2, layers::PaddingMode::kSymmetric);
  EXPECT_EQ(torch.pad_begin[1], 1);
  EXPECT_EQ(torch.pad_end[1], 1);
  EXPECT_EQ(tf.out(1), torch.out(1));
  const ConvGeometry same1 =
      layers::Conv2dPadded(1, 64, 56, 56, 64, 3, 1, layers::PaddingMode::kTfSame);
  EXPECT_EQ(same1.pad_begin[2], 1);
  EXPECT_EQ(same1.pad_end[2], 1);

  // The same weights give different logits under the two modes.
  ResNetConfig config{.base_width = 4,
                      .blocks = {1, 1, 1, 1},
                      .num_classes = 5,
                      .image_size = 32,
                      .padding = layers::PaddingMode::kTfSame};
  ResNet a(config, 2);
  config.padding = layers::PaddingMode::kSymmetric;
  ResNet b(config, 2);
  a.Initialize(3);
  b.Initialize(3);
  const std::vector<float> x = RandomImages(a, 5);
  const std::vector<int32_t> y = RandomLabels(a, 6);
  EXPECT_NE(a.ForwardTrain(x.data(), y.data(), 0.1f), b.ForwardTrain(x.data(), y.data(), 0.1f));
}

TEST(ResNetTest, InitializationFollowsTheReference) {
  ResNet model(ResNetConfig{.base_width = 16, .num_classes = 100, .image_size = 32}, 1);
  model.Initialize(7);
  for (const layers::Parameter& p : model.parameter_tensors()) {
    const float* v = p.value.f32();
    const int64_t n = p.value.numel();
    if (p.fan_in > 0) {
      // Truncated at 2 sigma, sigma = sqrt(2/fan_in)/0.8796: variance 2/fan_in.
      const double sigma = std::sqrt(2.0 / p.fan_in) / 0.87962566103423978;
      double sum_sq = 0.0, max_abs = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        sum_sq += static_cast<double>(v[i]) * v[i];
        max_abs = std::max(max_abs, static_cast<double>(std::fabs(v[i])));
      }
      EXPECT_LE(max_abs, 2.0 * sigma * (1 + 1e-6)) << p.name;
      if (n >= 4096) {
        EXPECT_NEAR(sum_sq / n * p.fan_in / 2.0, 1.0, 0.1) << p.name;
      }
    } else if (p.name == "fc.weight") {
      double sum_sq = 0.0;
      for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(v[i]) * v[i];
      EXPECT_NEAR(std::sqrt(sum_sq / n), 0.01, 0.001);
    } else {
      const float want = p.batch_norm && p.name.ends_with(".weight") ? 1.0f : 0.0f;
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v[i], want) << p.name;
    }
  }
  // Running mean 0, variance 1, alternating per BN.
  const std::span<float> buffers = model.buffers();
  EXPECT_EQ(*std::max_element(buffers.begin(), buffers.end()), 1.0f);
  EXPECT_EQ(*std::min_element(buffers.begin(), buffers.end()), 0.0f);
}

// Central differences of the training-mode loss (batch statistics, label
// smoothing) with respect to single parameters of every kind, through the
// whole composition: stem, max pool, blocks with both shortcut kinds, GAP, FC.
// The kernels have their own tight checks; this one catches wiring mistakes
// (a lost shortcut gradient, a wrong buffer), which are not percent-sized.
TEST(ResNetTest, WholeNetworkGradientMatchesFiniteDifferences) {
  const ResNetConfig config{.base_width = 4,
                            .blocks = {2, 1, 1, 1},
                            .num_classes = 5,
                            .image_size = 64,
                            .padding = layers::PaddingMode::kTfSame};
  ResNet model(config, 8);
  model.Initialize(11);
  const std::vector<float> x = RandomImages(model, 12);
  const std::vector<int32_t> y = RandomLabels(model, 13);
  model.ForwardTrain(x.data(), y.data(), 0.1f);
  model.Backward();
  const std::vector<float> grads(model.gradients().begin(), model.gradients().end());
  std::span<float> w = model.parameters();
  const std::vector<TensorSlice> slices = model.slices();
  const std::vector<std::string> names = model.parameter_names();
  const char* probes[] = {"conv1.weight",
                          "bn1.weight",
                          "layer1.0.conv2.weight",
                          "layer1.0.downsample.0.weight",
                          "layer1.1.bn3.bias",
                          "layer2.0.conv2.weight",
                          "layer4.0.bn1.weight",
                          "layer4.0.downsample.1.bias",
                          "fc.weight",
                          "fc.bias"};
  std::vector<double> relative_errors;
  for (const char* probe : probes) {
    const size_t k = std::find(names.begin(), names.end(), probe) - names.begin();
    ASSERT_LT(k, names.size()) << probe;
    const TensorSlice s = slices[k];
    // The two elements with the largest gradients, where a difference is
    // well above fp32 rounding of the loss.
    std::vector<int64_t> order(s.numel);
    for (int64_t i = 0; i < s.numel; ++i) order[i] = s.offset + i;
    std::partial_sort(order.begin(), order.begin() + 2, order.end(), [&](int64_t a, int64_t b) {
      return std::fabs(grads[a]) > std::fabs(grads[b]);
    });
    for (int j = 0; j < 2; ++j) {
      const int64_t i = order[j];
      const float saved = w[i];
      const float h = 1e-3f;
      w[i] = saved + h;
      const double up = model.ForwardTrain(x.data(), y.data(), 0.1f);
      w[i] = saved - h;
      const double down = model.ForwardTrain(x.data(), y.data(), 0.1f);
      w[i] = saved;
      const double numeric = (up - down) / (2.0 * h);
      EXPECT_NEAR(grads[i], numeric, 0.1 * std::fabs(numeric) + 1e-3)
          << probe << " element " << i - s.offset;
      relative_errors.push_back(std::fabs(grads[i] - numeric) / std::fabs(numeric));
    }
  }
  // ReLU and max-pool kinks crossed by the step, and fp32 rounding of the
  // loss, limit single differences to a few percent; typical ones are tight.
  ASSERT_EQ(relative_errors.size(), 20u);
  std::sort(relative_errors.begin(), relative_errors.end());
  EXPECT_LT(relative_errors[10], 0.02);
}

TEST(ResNetTest, SafetensorsRoundTripKeepsParametersAndStatistics) {
  const ResNetConfig config{
      .base_width = 4, .blocks = {1, 1, 1, 1}, .num_classes = 7, .image_size = 32};
  ResNet a(config, 2), b(config, 2);
  a.Initialize(1);
  const std::vector<float> x = RandomImages(a, 2);
  const std::vector<int32_t> y = RandomLabels(a, 3);
  a.ForwardTrain(x.data(), y.data(), 0.0f);  // moves the running statistics
  a.ForwardTrain(x.data(), y.data(), 0.0f);
  b.Initialize(99);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("resnet_rt_" + std::to_string(::getpid()) + ".safetensors"))
                               .string();
  ASSERT_TRUE(a.SaveSafetensors(path).ok());
  ASSERT_TRUE(b.LoadSafetensors(path).ok());
  std::remove(path.c_str());
  EXPECT_TRUE(std::equal(a.parameters().begin(), a.parameters().end(), b.parameters().begin()));
  EXPECT_TRUE(std::equal(a.buffers().begin(), a.buffers().end(), b.buffers().begin()));
  EXPECT_EQ(b.num_batches_tracked(), 2);

  // A model of another width refuses the file and names it.
  ResNet c(
      ResNetConfig{.base_width = 8, .blocks = {1, 1, 1, 1}, .num_classes = 7, .image_size = 32}, 2);
  ASSERT_TRUE(a.SaveSafetensors(path).ok());
  const absl::Status s = c.LoadSafetensors(path);
  std::remove(path.c_str());
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find(path), std::string::npos) << s;
  EXPECT_FALSE(c.LoadSafetensors(path + ".missing").ok());
}

TEST(ResNetTest, EvaluateBatchCountsOnlyValidSamples) {
  const ResNetConfig config{
      .base_width = 4, .blocks = {1, 1, 1, 1}, .num_classes = 3, .image_size = 32};
  ResNet model(config, 4);
  model.Initialize(4);
  const std::vector<float> x = RandomImages(model, 8);
  model.EvaluateBatch(x.data(), std::vector<int32_t>(4, 0).data(), 4);
  // Label each sample with its own top-1 prediction: all correct.
  std::vector<int32_t> predicted(4);
  for (int i = 0; i < 4; ++i) {
    const float* z = model.logits().f32() + i * 3;
    predicted[i] = static_cast<int32_t>(std::max_element(z, z + 3) - z);
  }
  EXPECT_EQ(model.EvaluateBatch(x.data(), predicted.data(), 4), 4);
  EXPECT_EQ(model.EvaluateBatch(x.data(), predicted.data(), 3), 3);
  predicted[1] = -1;  // padding never counts
  EXPECT_EQ(model.EvaluateBatch(x.data(), predicted.data(), 4), 3);
  predicted[0] = (predicted[0] + 1) % 3;
  EXPECT_EQ(model.EvaluateBatch(x.data(), predicted.data(), 4), 2);
}

}  // namespace
}  // namespace mlperf::models
