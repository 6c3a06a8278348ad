// The whole ResNet against PyTorch 1.13 (tests/resnet/resnet_parity.py, run
// with /usr/bin/python3): the same weights go through our safetensors file
// under torchvision names, the same batch through both. With torchvision's
// symmetric padding, inference logits, training logits and loss (label
// smoothing 0.1) and the updated running statistics agree within fp32
// tolerance, and every parameter gradient is as close to PyTorch's fp64
// result as PyTorch's own fp32 one (see below). Skips where PyTorch is
// missing; uses torchvision's resnet50 when installed, else the same layers
// built from torch.nn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "base/environment.h"
#include "fmt/format.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/io/safetensors.h"
#include "reference/models/resnet.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

using testing::Compare;
using testing::Errors;
using testing::TempPath;

constexpr float kLabelSmoothing = 0.1f;

struct Case {
  int64_t width;
  std::array<int, 4> blocks;
  int classes;
  int image;
  int64_t batch;
};

void RunParity(const Case& c) {
  if (!testing::PythonHas("torch"))
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch)";
  const ResNetConfig config{.base_width = c.width,
                            .blocks = c.blocks,
                            .num_classes = c.classes,
                            .image_size = c.image,
                            .layout = core::Layout::kNCHW,
                            .padding = layers::PaddingMode::kSymmetric};
  ResNet model(config, c.batch);
  model.Initialize(21);
  // Non-trivial BN state so that inference mode tests the running statistics.
  for (size_t i = 0; i < model.parameter_tensors().size(); ++i) {
    const layers::Parameter& p = model.parameter_tensors()[i];
    if (p.batch_norm)
      core::FillUniform(p.value, p.name.ends_with(".weight") ? 0.5f : -0.3f,
                        p.name.ends_with(".weight") ? 1.5f : 0.3f, {.seed = 22, .offset = i});
    if (p.bias) core::FillUniform(p.value, -0.1f, 0.1f, {.seed = 22, .offset = i});
  }
  for (size_t i = 0; i < model.buffer_tensors().size(); ++i) {
    const layers::NamedBuffer& b = model.buffer_tensors()[i];
    const bool var = b.name.ends_with(".running_var");
    core::FillUniform(b.value, var ? 0.5f : -0.2f, var ? 2.0f : 0.2f, {.seed = 23, .offset = i});
  }
  std::vector<float> images(c.batch * model.image_elements());
  for (size_t i = 0; i < images.size(); ++i)
    images[i] = 2.0f * core::PhiloxUniform(24, 0, i) - 1.0f;
  std::vector<int32_t> labels(c.batch);
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>(core::PhiloxBits(25, 0, i) % c.classes);

  const std::string weights = TempPath("resnet_parity_w"), batch = TempPath("resnet_parity_x");
  const std::string out = TempPath("resnet_parity_out");
  ASSERT_TRUE(model.SaveSafetensors(weights).ok());
  const io::NamedTensor batch_tensors[] = {
      {"images", core::Tensor(images.data(), {c.batch, 3, c.image, c.image}, core::DType::kF32)},
      {"labels", core::Tensor(labels.data(), {c.batch}, core::DType::kI32)}};
  ASSERT_TRUE(io::SaveSafetensors(batch, batch_tensors).ok());
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/tests/resnet/resnet_parity.py {} {} {} {} {},{},{},{} {} {}",
                  MLPERF_SOURCE_DIR, weights, batch, out, c.width, c.blocks[0], c.blocks[1],
                  c.blocks[2], c.blocks[3], c.classes, kLabelSmoothing);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(file.ok()) << file.status();
  for (const std::string& p : {weights, batch, out}) std::remove(p.c_str());
  const auto oracle = file->metadata().find("oracle");
  std::printf("oracle: %s\n", oracle == file->metadata().end() ? "?" : oracle->second.c_str());

  const int64_t logits_n = c.batch * c.classes;
  auto span_of = [](const core::Tensor& t) {
    return std::span<const float>(t.f32(), static_cast<size_t>(t.numel()));
  };
  model.EvaluateBatch(images.data(), labels.data(), static_cast<int>(c.batch));
  const Errors eval = Compare(*file, "eval/logits", span_of(model.logits()));
  EXPECT_LT(eval.ours, 1e-5) << "eval logits";

  const float loss = model.ForwardTrain(images.data(), labels.data(), kLabelSmoothing);
  const Errors train = Compare(*file, "train/logits", span_of(model.logits()));
  EXPECT_LT(train.ours, 1e-4) << "train logits";
  EXPECT_LT(Compare(*file, "train/loss", {&loss, 1}).ours, 1e-5) << "loss " << loss;
  double worst_stat = 0.0;
  for (const layers::NamedBuffer& b : model.buffer_tensors()) {
    const Errors e = Compare(*file, "after/" + b.name, span_of(b.value));
    EXPECT_LT(e.ours, 1e-4) << b.name;
    worst_stat = std::max(worst_stat, e.ours);
  }
  ASSERT_EQ(logits_n, model.logits().numel());

  // Gradients of a deep ReLU network in fp32 carry the rounding of every
  // layer, and where a pre-activation sits within rounding of zero the two
  // sides take different ReLU branches, which moves every gradient below it
  // by up to a few percent (seen at 224 pixels in PyTorch's own fp32 result).
  // So both fp32 results are measured against PyTorch in fp64: ours must be
  // about as accurate as PyTorch's, per tensor with an allowance for such a
  // branch, and in the median over tensors without one. Wiring mistakes
  // give errors of order one.
  model.Backward();
  std::vector<double> ours, theirs;
  for (const layers::Parameter& p : model.parameter_tensors()) {
    const Errors e = Compare(*file, "grad/" + p.name, span_of(p.grad));
    EXPECT_LT(e.ours, 4.0 * e.torch + 3e-2)
        << "gradient of " << p.name << " (torch fp32 " << e.torch << ")";
    if (base::GetEnv("PARITY_VERBOSE"))
      std::printf("%s ours %.2e torch %.2e\n", p.name.c_str(), e.ours, e.torch);
    ours.push_back(e.ours);
    theirs.push_back(e.torch);
  }
  std::sort(ours.begin(), ours.end());
  std::sort(theirs.begin(), theirs.end());
  std::printf(
      "errors vs fp64: eval logits %.1e, train logits %.1e (torch fp32 %.1e), running "
      "statistics %.1e; gradients median %.1e max %.1e (torch fp32 median %.1e max %.1e)\n",
      eval.ours, train.ours, train.torch, worst_stat, ours[ours.size() / 2], ours.back(),
      theirs[theirs.size() / 2], theirs.back());
  EXPECT_LT(ours[ours.size() / 2], 2.0 * theirs[theirs.size() / 2] + 1e-4);
}

TEST(ResNetParityTest, Width16MatchesTorch) {
  RunParity({.width = 16, .blocks = {3, 4, 6, 3}, .classes = 10, .image = 64, .batch = 4});
}

TEST(ResNetParityTest, ResNet50At64PixelsMatchesTorch) {
  RunParity({.width = 64, .blocks = {3, 4, 6, 3}, .classes = 1000, .image = 64, .batch = 2});
}

// About 25 s on 2 cores: run on demand with --gtest_also_run_disabled_tests.
TEST(ResNetParityTest, DISABLED_ResNet50At224PixelsMatchesTorch) {
  RunParity({.width = 64, .blocks = {3, 4, 6, 3}, .classes = 1000, .image = 224, .batch = 2});
}

}  // namespace
}  // namespace mlperf::models
