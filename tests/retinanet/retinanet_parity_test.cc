// RetinaNet against torchvision's on the same weights and images
// (tests/retinanet/retinanet_torch.py), at the reference's widths (32
// groups of 4, FPN 256; one block per stage, 10 classes, 64 x 64 inputs)
// and as the demonstration's reduced member: random frozen batch norms, one
// image with boxes and one without. The two losses, every trainable
// parameter's gradient (the first two stages frozen, as
// trainable_backbone_layers=3 leaves them) and the post-processed detections.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/philox.h"
#include "reference/io/safetensors.h"
#include "reference/models/retinanet.h"
#include "tests/core/parity_util.h"

namespace mlperf::models {
namespace {

using core::Tensor;

float Uniform(uint64_t stream, int64_t i, float lo, float hi) {
  const uint32_t bits = core::PhiloxBits(stream, 0, static_cast<uint64_t>(i));
  return lo + (hi - lo) * static_cast<float>(bits >> 8) / 16777216.0f;
}

RetinaNetConfig SmallReferenceWidth() {
  RetinaNetConfig c;
  c.backbone.blocks = {1, 1, 1, 1};
  c.backbone.image_size = 64;
  c.num_classes = 10;
  c.max_boxes = 4;
  return c;
}

RetinaNetConfig Demonstrations() {
  RetinaNetConfig c;
  c.backbone = {.stem_width = 16,
                .blocks = {1, 1, 1, 1},
                .groups = 4,
                .width_per_group = 8,
                .trainable_layers = 3,
                .fpn_channels = 64,
                .image_size = 64};
  c.num_classes = 3;
  c.max_boxes = 4;
  return c;
}

void ExpectTorchvisionsAnswers(const RetinaNetConfig& config) {
  RetinaNet model(config, 2, 11);
  // Frozen batch norms that are not the identity, and class biases that let
  // detections through the score threshold.
  std::vector<float> buffers = model.BuffersToHost();
  for (const layers::NamedBuffer& b : model.buffer_tensors()) {
    const int64_t first = static_cast<const float*>(b.value.data()) - model.buffers().data();
    const bool scale = b.name.ends_with(".weight") || b.name.ends_with(".running_var");
    for (int64_t i = 0; i < b.value.numel(); ++i)
      buffers[first + i] =
          scale ? Uniform(1, first + i, 0.5f, 1.5f) : Uniform(2, first + i, -0.2f, 0.2f);
  }
  model.BuffersFromHost(buffers);
  for (const layers::Parameter& p : model.parameter_tensors())
    if (p.name == "head.classification_head.cls_logits.bias") {
      std::vector<float> bias(static_cast<size_t>(p.value.numel()));
      for (size_t i = 0; i < bias.size(); ++i)
        bias[i] = Uniform(3, static_cast<int64_t>(i), -3.0f, 0.0f);
      model.SetParameter(p, bias);
    }

  OwnedBatch owned;
  const int64_t n = 2, size = config.backbone.image_size, m = config.max_boxes;
  const Tensor images = owned.Add({n, 3, size, size}, core::DType::kF32);
  const Tensor boxes = owned.Add({n, m, 4}, core::DType::kF32);
  const Tensor labels = owned.Add({n, m}, core::DType::kI32);
  for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = Uniform(4, i, -2.0f, 2.0f);
  const float truth[3][4] = {{4, 6, 30, 28}, {20, 10, 60, 50}, {33, 35, 45, 47}};
  for (int64_t i = 0; i < n * m; ++i) labels.as<int32_t>()[i] = -1;
  for (int j = 0; j < 3; ++j) {  // image 0 has three boxes, image 1 none
    std::copy(truth[j], truth[j] + 4, boxes.f32() + j * 4);
    labels.as<int32_t>()[j] = (3 * j + 1) % config.num_classes;
  }
  owned.batch.count = n;

  std::vector<float> params = model.ParametersToHost(), host_buffers = model.BuffersToHost();
  std::vector<std::byte> frozen = model.FrozenToHost();
  std::vector<io::NamedTensor> named = model.NamedHostTensors(params, host_buffers, &frozen);
  named.push_back({"input/images", images});
  named.push_back({"input/boxes", boxes});
  std::vector<float> label_floats(labels.as<int32_t>(), labels.as<int32_t>() + n * m);
  named.push_back({"input/labels", Tensor(label_floats.data(), {n, m}, core::DType::kF32)});
  const auto& b = config.backbone;
  std::vector<float> cfg = {
      static_cast<float>(b.blocks[0]),        static_cast<float>(b.blocks[1]),
      static_cast<float>(b.blocks[2]),        static_cast<float>(b.blocks[3]),
      static_cast<float>(b.groups),           static_cast<float>(b.width_per_group),
      static_cast<float>(b.trainable_layers), static_cast<float>(config.num_classes),
      static_cast<float>(b.stem_width),       static_cast<float>(b.fpn_channels)};
  const char* cfg_names[] = {"blocks0",         "blocks1",          "blocks2", "blocks3", "groups",
                             "width_per_group", "trainable_layers", "classes", "stem",    "fpn"};
  for (size_t i = 0; i < cfg.size(); ++i)
    named.push_back(
        {fmt::format("config/{}", cfg_names[i]), Tensor(&cfg[i], {1}, core::DType::kF32)});
  const std::string in = testing::TempPath("retinanet_in"),
                    out = testing::TempPath("retinanet_out");
  ASSERT_TRUE(io::SaveSafetensors(in, named).ok());
  const std::string cmd = fmt::format(
      "/usr/bin/python3 {}/tests/retinanet/retinanet_torch.py {} {}", MLPERF_SOURCE_DIR, in, out);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto oracle = io::SafetensorsFile::Read(out);
  ASSERT_TRUE(oracle.ok()) << oracle.status();

  // Training: the losses and every trainable gradient.
  const std::vector<Tensor> inputs = {images, boxes, labels};
  model.ForwardTrain({inputs, n});
  model.Backward();
  EXPECT_NEAR(model.classification_loss(), testing::Load(*oracle, "loss/classification")[0],
              1e-5 * (1 + model.classification_loss()));
  EXPECT_NEAR(model.regression_loss(), testing::Load(*oracle, "loss/regression")[0],
              1e-5 * (1 + model.regression_loss()));
  const std::vector<float> grads = model.GradientsToHost();
  int compared = 0;
  for (const layers::Parameter& p : model.parameter_tensors()) {
    if (!p.trainable) {
      EXPECT_EQ(oracle->tensors().count("grad/" + p.name), 0u) << p.name << " trains in torch";
      continue;
    }
    const int64_t first = static_cast<const float*>(p.grad.data()) - model.gradients().data();
    const std::span<const float> ours(grads.data() + first, static_cast<size_t>(p.grad.numel()));
    EXPECT_LT(testing::NormError(ours, testing::Load(*oracle, "grad/" + p.name)), 1e-4) << p.name;
    ++compared;
  }
  EXPECT_GT(compared, 20);

  // Evaluation: the detections of each image.
  const std::vector<detection::Detections> dets = model.Detect({inputs, n});
  ASSERT_EQ(dets.size(), 2u);
  // The same detections; where two scores agree to float rounding their
  // order may differ (the sorts break such ties differently), so each is
  // matched to an unused one of the oracle's with its score, label and box.
  for (int i = 0; i < 2; ++i) {
    const std::string p = fmt::format("detections/{}/", i);
    const std::vector<float> want_scores = testing::Load(*oracle, p + "scores");
    const std::vector<float> want_labels = testing::Load(*oracle, p + "labels");
    const std::vector<float> want_boxes = testing::Load(*oracle, p + "boxes");
    ASSERT_EQ(dets[i].scores.size(), want_scores.size()) << i;
    EXPECT_GT(want_scores.size(), 5u);
    std::vector<bool> used(want_scores.size(), false);
    int reordered = 0;
    for (size_t k = 0; k < want_scores.size(); ++k) {
      const float* box = &dets[i].boxes[k].x1;
      size_t found = want_scores.size();
      for (size_t j = 0; j < want_scores.size() && found == want_scores.size(); ++j) {
        bool same = !used[j] && std::fabs(dets[i].scores[k] - want_scores[j]) < 1e-5f &&
                    dets[i].labels[k] == static_cast<int64_t>(want_labels[j]);
        for (int c = 0; c < 4 && same; ++c)
          same = std::fabs(box[c] - want_boxes[4 * j + c]) < 1e-3f;
        if (same) found = j;
      }
      ASSERT_LT(found, want_scores.size()) << "image " << i << " detection " << k << " has no twin";
      used[found] = true;
      reordered += found != k;
    }
    EXPECT_LE(reordered, 4) << i;
  }
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

TEST(RetinaNetParity, TheReferencesWidthsMatchTorchvision) {
  if (!testing::PythonHas("torch, torchvision"))
    GTEST_SKIP() << "torchvision is missing for /usr/bin/python3";
  ExpectTorchvisionsAnswers(SmallReferenceWidth());
}

TEST(RetinaNetParity, TheDemonstrationsMemberMatchesTorchvision) {
  if (!testing::PythonHas("torch, torchvision"))
    GTEST_SKIP() << "torchvision is missing for /usr/bin/python3";
  ExpectTorchvisionsAnswers(Demonstrations());
}

}  // namespace
}  // namespace mlperf::models
