// The whole 3D U-Net against PyTorch 1.13 (tests/unet3d/unet3d_parity.py, run
// with /usr/bin/python3): the same weights through our safetensors file
// under the reference's state_dict names, the same batch through both. The
// logits and the DiceCE loss agree within fp32 tolerance, and every parameter
// gradient is about as close to PyTorch's fp64 result as PyTorch's own fp32
// one, in both layouts (PyTorch run once for both). Skips where PyTorch is
// missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/environment.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/io/safetensors.h"
#include "reference/models/sliding_window.h"
#include "reference/models/unet3d.h"
#include "tests/core/parity_util.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::models {
namespace {

using testing::Compare;
using testing::Errors;
using testing::Load;
using testing::NormError;
using testing::TempPath;

// median_ratio: how much further from fp64 than PyTorch's fp32 gradients ours
// may be in the median over tensors. PyTorch runs once; the model is checked
// against it in each of `layouts` (the same weights: one input channel reads
// alike in both).
void RunParity(const std::vector<int64_t>& filters, int64_t roi, int64_t batch,
               double median_ratio = 2.0,
               const std::vector<core::Layout>& layouts = {core::Layout::kNCDHW,
                                                           core::Layout::kNDHWC}) {
  if (!testing::PythonHas("torch"))
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch)";
  auto make_model = [&](core::Layout layout) {
    auto model = std::make_unique<UNet3D>(
        UNet3DConfig{.filters = filters, .roi = roi, .layout = layout}, batch);
    model->Initialize(31);
    // Non-trivial norm scales and shifts.
    for (size_t i = 0; i < model->parameter_tensors().size(); ++i) {
      const layers::Parameter& p = model->parameter_tensors()[i];
      if (p.batch_norm)
        core::FillUniform(p.value, p.name.ends_with(".weight") ? 0.5f : -0.3f,
                          p.name.ends_with(".weight") ? 1.5f : 0.3f, {.seed = 32, .offset = i});
    }
    return model;
  };
  // Volumes whose labels follow the intensity, so the Dice terms are not trivial.
  const int64_t voxels = roi * roi * roi;
  std::vector<float> images(batch * voxels);
  std::vector<int32_t> labels(batch * voxels);
  for (size_t i = 0; i < images.size(); ++i) {
    images[i] = 2.0f * core::PhiloxUniform(33, 0, i) - 1.0f;
    labels[i] = images[i] > 0.6f ? 2 : images[i] > 0.0f ? 1 : 0;
  }
  const std::string weights = TempPath("unet3d_parity_w"), batch_file = TempPath("unet3d_parity_x");
  const std::string out = TempPath("unet3d_parity_out");
  ASSERT_TRUE(make_model(layouts.front())->SaveSafetensors(weights).ok());
  const io::NamedTensor batch_tensors[] = {
      {"images", core::Tensor(images.data(), {batch, 1, roi, roi, roi}, core::DType::kF32)},
      {"labels", core::Tensor(labels.data(), {batch, roi, roi, roi}, core::DType::kI32)}};
  ASSERT_TRUE(io::SaveSafetensors(batch_file, batch_tensors).ok());
  const std::string filter_list = fmt::format("{}", fmt::join(filters, ","));
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/tests/unet3d/unet3d_parity.py {} {} {} {} 3",
                  MLPERF_SOURCE_DIR, weights, batch_file, out, filter_list);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(file.ok()) << file.status();
  for (const std::string& p : {weights, batch_file, out}) std::remove(p.c_str());

  auto span_of = [](const core::Tensor& t) {
    return std::span<const float>(t.f32(), static_cast<size_t>(t.numel()));
  };
  const Batch b = {
      .inputs = {core::Tensor(images.data(), {batch, 1, roi, roi, roi}, core::DType::kF32),
                 core::Tensor(labels.data(), {batch, roi, roi, roi}, core::DType::kI32)},
      .count = batch};
  for (const core::Layout layout : layouts) {
    SCOPED_TRACE(layout == core::Layout::kNDHWC ? "NDHWC" : "NCDHW");
    const std::unique_ptr<UNet3D> model = make_model(layout);
    EXPECT_EQ(file->metadata().at("parameters"), std::to_string(model->num_parameters()));
    const float loss = model->ForwardTrain(b);
    // NDHWC logits are compared as [n, classes, voxels], torch's order.
    std::vector<float> logits_ncdhw(span_of(model->logits()).begin(),
                                    span_of(model->logits()).end());
    if (layout == core::Layout::kNDHWC)
      for (int64_t i = 0; i < batch; ++i)
        for (int64_t j = 0; j < 3; ++j)
          for (int64_t q = 0; q < voxels; ++q)
            logits_ncdhw[(i * 3 + j) * voxels + q] =
                model->logits().f32()[(i * voxels + q) * 3 + j];
    const Errors logits = Compare(*file, "logits", logits_ncdhw);
    EXPECT_LT(logits.ours, 1e-4) << "logits (torch fp32 " << logits.torch << ")";
    const Errors loss_error = Compare(*file, "loss", {&loss, 1});
    EXPECT_LT(loss_error.ours, 1e-5) << "loss " << loss;

    // As for ResNet: a ReLU input within rounding of zero can take the other
    // branch in fp32, so both fp32 results are measured against fp64.
    model->Backward();
    std::vector<double> ours, theirs;
    for (const layers::Parameter& p : model->parameter_tensors()) {
      const Errors e = Compare(*file, "grad/" + p.name, span_of(p.grad));
      EXPECT_LT(e.ours, 4.0 * e.torch + 1e-3)
          << "gradient of " << p.name << " (torch fp32 " << e.torch << ")";
      if (base::GetEnv("PARITY_VERBOSE"))
        std::printf("%s ours %.2e torch %.2e\n", p.name.c_str(), e.ours, e.torch);
      ours.push_back(e.ours);
      theirs.push_back(e.torch);
    }
    std::sort(ours.begin(), ours.end());
    std::sort(theirs.begin(), theirs.end());
    std::printf(
        "errors vs fp64: logits %.1e (torch fp32 %.1e), loss %.1e; gradients median %.1e max %.1e "
        "(torch fp32 median %.1e max %.1e)\n",
        logits.ours, logits.torch, loss_error.ours, ours[ours.size() / 2], ours.back(),
        theirs[theirs.size() / 2], theirs.back());
    EXPECT_LT(ours[ours.size() / 2], median_ratio * theirs[theirs.size() / 2] + 1e-5);
  }
}

// Both layouts: NCDHW, and channels-last, the CPU's training layout.
TEST(UNet3DParityTest, ReducedWidthMatchesTorch) { RunParity({4, 8, 16}, 32, 2); }

TEST(UNet3DParityTest, ReducedWidthAllLevelsMatchesTorch) { RunParity({4, 8, 16, 32, 40}, 64, 1); }

// At the reference width the deepest levels normalise 320 channels over 2^3
// and 4^3 voxels, and the backward amplifies fp32 rounding: PyTorch's own
// fp32 gradients are 5e-4 to 1.7e-3 from fp64 in the median, by machine
// (1e-6 at reduced width). Ours measured 1.5e-3 (NCDHW) and 1.2e-3 (NDHWC)
// where PyTorch's were 1.7e-3 (2026-11-25), 2.8 times PyTorch's on a
// machine where those were 5e-4, and in NDHWC 2.0e-3 against 5.4e-4 (3.7
// times) on a 2-vCPU AMD EPYC whose OpenBLAS takes its Haswell kernels
// (2026-11-28, the code of 2026-11-27 alike); hence the ratio of 4, the
// per-tensor bound's.
TEST(UNet3DParityTest, ReferenceWidthAtRoi64MatchesTorch) {
  RunParity({32, 64, 128, 256, 320}, 64, 1, /*median_ratio=*/4.0);
}
// The sliding-window evaluation against a PyTorch transcription of the
// reference's on a volume whose axes take each path: 37 is cropped to 32
// (one window), 50 cropped to 48 (two overlapping windows), 27 padded to 32.
// Windows run two at a time, so the last call is a partial batch.
TEST(UNet3DParityTest, SlidingWindowMatchesTorch) {
  if (!testing::PythonHas("torch"))
    GTEST_SKIP() << "PyTorch is not installed for /usr/bin/python3 (apt-get install python3-torch)";
  const std::vector<int64_t> filters = {4, 8, 16};
  const int64_t roi = 32, d = 37, h = 50, w = 27, voxels = d * h * w;
  UNet3D model({.filters = filters, .roi = roi}, 2);
  model.Initialize(41);
  std::vector<float> image(voxels);
  std::vector<int32_t> labels(voxels);
  for (int64_t i = 0; i < voxels; ++i) {
    image[i] = 2.0f * core::PhiloxUniform(42, 0, i) - 1.0f;
    labels[i] = image[i] > 0.5f ? 2 : image[i] > -0.2f ? 1 : 0;
  }
  const core::Tensor image_t(image.data(), {1, 1, d, h, w}, core::DType::kF32);
  const core::Tensor labels_t(labels.data(), {1, d, h, w}, core::DType::kI32);
  const std::string weights = TempPath("unet3d_sw_w"), volume = TempPath("unet3d_sw_x");
  const std::string out = TempPath("unet3d_sw_out");
  ASSERT_TRUE(model.SaveSafetensors(weights).ok());
  const io::NamedTensor volume_tensors[] = {{"image", image_t}, {"labels", labels_t}};
  ASSERT_TRUE(io::SaveSafetensors(volume, volume_tensors).ok());
  const std::string cmd =
      fmt::format("/usr/bin/python3 {}/tests/unet3d/unet3d_parity.py sliding {} {} {} {} 3 {}",
                  MLPERF_SOURCE_DIR, weights, volume, out, fmt::join(filters, ","), roi);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(file.ok()) << file.status();
  for (const std::string& p : {weights, volume, out}) std::remove(p.c_str());

  const VolumeLogits ours = SlidingWindowLogits(
      {.roi = roi}, image.data(), {d, h, w}, 3, model.batch_size(),
      [&](const float* windows, int64_t count, float* logits) {
        const Batch b{.inputs = {core::Tensor(const_cast<float*>(windows),
                                              {count, 1, roi, roi, roi}, core::DType::kF32)},
                      .count = count};
        model.ForwardInference(b);
        std::copy_n(model.logits().f32(), count * 3 * roi * roi * roi, logits);
      });
  EXPECT_EQ(ours.begin, (std::array<int64_t, 3>{2, 1, 0}));
  EXPECT_EQ(ours.shape, (std::array<int64_t, 3>{32, 48, 27}));
  const std::vector<float> theirs = Load(*file, "logits");
  EXPECT_LT(NormError(ours.logits, theirs), 1e-5);
  const std::vector<double> dice = model.EvaluateCase(image_t, labels_t, {.roi = roi});
  const std::vector<float> torch_dice = Load(*file, "dice");
  ASSERT_EQ(dice.size(), 2u);
  ASSERT_EQ(torch_dice.size(), 2u);
  // The same weights channels-last: its window logits are transposed back
  // for the blend.
  UNet3D last({.filters = filters, .roi = roi, .layout = core::Layout::kNDHWC}, 2);
  last.Initialize(41);
  const std::vector<double> dice_last = last.EvaluateCase(image_t, labels_t, {.roi = roi});
  ASSERT_EQ(dice_last.size(), 2u);
  for (int c = 0; c < 2; ++c) {
    EXPECT_NEAR(dice[c], torch_dice[c], 1e-4) << "class " << c + 1;
    EXPECT_NEAR(dice_last[c], torch_dice[c], 1e-4) << "NDHWC, class " << c + 1;
  }
  std::printf(
      "sliding window: logits error %.1e, dice kidney %.6f (torch %.6f), tumour %.6f "
      "(torch %.6f)\n",
      NormError(ours.logits, theirs), dice[0], torch_dice[0], dice[1], torch_dice[1]);
}

}  // namespace
}  // namespace mlperf::models
