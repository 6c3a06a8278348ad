// RetinaNet's backbone as the reference builds it (resnet_fpn_backbone over
// torchvision's resnext50_32x4d): a ResNeXt body with frozen batch norms
// (stem 7x7/2, max pool, four stages of grouped bottlenecks, stride in the
// 3x3, projection on each stage's first block), the first stages frozen,
// and a feature pyramid over stages 2-4 (1x1 laterals, nearest top-down,
// 3x3 outputs) with P6 and P7 by strided 3x3s from P5 (ReLU before P7):
// five levels P3-P7 of fpn_channels each. State-dict names are the
// reference's (backbone.body.*, backbone.fpn.*). Channels-first fp32.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/layers/conv_bias.h"
#include "reference/layers/frozen_conv_bn.h"
#include "reference/layers/parameters.h"

namespace mlperf::models {

struct ResNeXtFpnConfig {
  int64_t stem_width = 64;  // stage s has planes stem_width * 2^s, outputs 4x that
  std::array<int, 4> blocks = {3, 4, 6, 3};
  int64_t groups = 32;
  int64_t width_per_group = 4;  // bottleneck width int(planes * wpg / 64) * groups
  // The reference's trainable_backbone_layers: the last n of layer4, layer3,
  // layer2, layer1, conv1 train (3: layer2-4).
  int trainable_layers = 3;
  int64_t fpn_channels = 256;
  int64_t image_size = 800;  // square inputs
};

class ResNeXtFpn {
 public:
  static constexpr int kLevels = 5;  // P3 .. P7

  void Allocate(const ResNeXtFpnConfig& config, int64_t batch, const layers::ModelArenas& arenas,
                layers::ParameterRegistry* registry);
  // images: [batch, 3, size, size].
  void Forward(const core::Tensor& images, const core::Tensor& workspace);
  // dfeatures: the gradients of P3..P7 (overwritten). Sets the gradients of
  // every trainable parameter of the backbone.
  void Backward(std::span<const core::Tensor> dfeatures, const core::Tensor& workspace);

  const core::Tensor& feature(int level) const { return features_[level]; }
  int64_t workspace_elements() const;

 private:
  struct Block {
    layers::FrozenConvBn conv1, conv2, conv3, down;
    bool has_down = false;
    core::Tensor input;
    int stage = 1;
  };
  void BackwardBlock(Block& b, bool need_dx, const core::Tensor& workspace);
  bool Trains(int stage) const { return stage >= 5 - config_.trainable_layers; }

  ResNeXtFpnConfig config_;
  layers::FrozenConvBn stem_;
  ConvGeometry pool_;
  core::Tensor images_, pooled_;  // images_: the last forward's
  std::vector<Block> blocks_;
  std::array<core::Tensor, 3> c_;  // C3, C4, C5
  std::array<layers::ConvBias, 3> inner_, layer_;
  layers::ConvBias p6_, p7_;
  core::Tensor merged_[2], upsampled_, relu_p6_;
  std::array<core::Tensor, kLevels> features_;
  // Backward scratch: the body's four of its largest activation, the
  // pyramid's gradients.
  std::array<core::Tensor, 4> scratch_;
  std::array<core::Tensor, 3> dc_;
  core::Tensor dmerged_[2], dinner_top_, dtmp_;
};

}  // namespace mlperf::models
