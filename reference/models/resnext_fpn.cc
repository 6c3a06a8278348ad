#include "reference/models/resnext_fpn.h"

#include <algorithm>
#include <string>

#include "base/check.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {

using core::Tensor;

namespace {

ConvGeometry Conv(int64_t n, int64_t c, int64_t size, int64_t k, int64_t kernel, int64_t stride,
                  int64_t groups = 1) {
  ConvGeometry g = Conv2d(n, c, size, size, k, kernel, kernel, stride, kernel / 2);
  g.groups = groups;
  return g;
}

}  // namespace

void ResNeXtFpn::Allocate(const ResNeXtFpnConfig& config, int64_t batch,
                          const layers::ModelArenas& arenas, layers::ParameterRegistry* registry) {
  config_ = config;
  MLPERF_CHECK(config.trainable_layers >= 0 && config.trainable_layers <= 5);
  const std::string body = "backbone.body.";
  int64_t size = config.image_size;
  stem_.Allocate(Conv(batch, 3, size, config.stem_width, 7, 2), /*relu=*/true,
                 config.trainable_layers == 5, body + "conv1", body + "bn1", arenas, registry);
  size = stem_.geometry().out(1);
  pool_ = Conv2d(batch, config.stem_width, size, size, config.stem_width, 3, 3, 2, 1);
  size = pool_.out(1);
  pooled_ = arenas.activations->Allocate({batch, config.stem_width, size, size}, core::DType::kF32,
                                         core::Layout::kNCHW);
  int64_t largest = std::max(stem_.output().numel(), pooled_.numel());

  blocks_.clear();
  blocks_.reserve(static_cast<size_t>(config.blocks[0] + config.blocks[1] + config.blocks[2] +
                                      config.blocks[3]));
  int64_t channels = config.stem_width;
  Tensor input = pooled_;
  for (int stage = 1; stage <= 4; ++stage) {
    const int64_t planes = config.stem_width << (stage - 1);
    const auto width = static_cast<int64_t>(static_cast<double>(planes) *
                                            (static_cast<double>(config.width_per_group) / 64.0)) *
                       config.groups;
    const int64_t out = planes * 4;
    const bool trains = Trains(stage);
    for (int b = 0; b < config.blocks[stage - 1]; ++b) {
      const int64_t stride = stage > 1 && b == 0 ? 2 : 1;
      const std::string name = fmt::format("{}layer{}.{}.", body, stage, b);
      Block& block = blocks_.emplace_back();
      block.stage = stage;
      block.input = input;
      block.conv1.Allocate(Conv(batch, channels, size, width, 1, 1), true, trains, name + "conv1",
                           name + "bn1", arenas, registry);
      block.conv2.Allocate(Conv(batch, width, size, width, 3, stride, config.groups), true, trains,
                           name + "conv2", name + "bn2", arenas, registry);
      const int64_t out_size = block.conv2.geometry().out(1);
      block.conv3.Allocate(Conv(batch, width, out_size, out, 1, 1), true, trains, name + "conv3",
                           name + "bn3", arenas, registry);
      block.has_down = b == 0;
      if (block.has_down)
        block.down.Allocate(Conv(batch, channels, size, out, 1, stride), false, trains,
                            name + "downsample.0", name + "downsample.1", arenas, registry);
      for (const Tensor* t : {&block.conv1.output(), &block.conv2.output(), &block.conv3.output()})
        largest = std::max(largest, t->numel());
      channels = out;
      size = out_size;
      input = block.conv3.output();
    }
    if (stage >= 2) c_[stage - 2] = input;
  }

  // The pyramid over C3..C5: laterals and outputs, then P6 from P5, P7.
  const std::string fpn = "backbone.fpn.";
  const int64_t f = config.fpn_channels;
  for (int i = 0; i < 3; ++i) {
    inner_[i].Allocate(c_[i].dim(1), f, 1, false, fmt::format("{}inner_blocks.{}", fpn, i), arenas,
                       registry);
    inner_[i].AddSite(Conv(batch, c_[i].dim(1), c_[i].dim(2), f, 1, 1), arenas);
  }
  for (int i = 0; i < 3; ++i) {
    layer_[i].Allocate(f, f, 3, false, fmt::format("{}layer_blocks.{}", fpn, i), arenas, registry);
    ConvGeometry g = Conv(batch, f, c_[i].dim(2), f, 3, 1);
    g.winograd = true;  // as the heads' (retinanet.cc)
    layer_[i].AddSite(g, arenas);
  }
  p6_.Allocate(f, f, 3, false, fpn + "extra_blocks.p6", arenas, registry);
  p6_.AddSite(Conv(batch, f, c_[2].dim(2), f, 3, 2), arenas);
  p7_.Allocate(f, f, 3, false, fpn + "extra_blocks.p7", arenas, registry);
  p7_.AddSite(Conv(batch, f, p6_.output(0).dim(2), f, 3, 2), arenas);
  auto activation = [&](const Tensor& like) {
    return arenas.activations->Allocate(like.shape(), core::DType::kF32, core::Layout::kNCHW);
  };
  for (int i = 0; i < 2; ++i) {
    merged_[i] = activation(inner_[i].output(0));
    dmerged_[i] = activation(inner_[i].output(0));
  }
  upsampled_ = activation(inner_[0].output(0));
  relu_p6_ = activation(p6_.output(0));
  for (int i = 0; i < 3; ++i) features_[i] = layer_[i].output(0);
  features_[3] = p6_.output(0);
  features_[4] = p7_.output(0);
  for (int i = 0; i < 3; ++i) dc_[i] = activation(c_[i]);
  dinner_top_ = activation(inner_[2].output(0));
  dtmp_ = activation(inner_[0].output(0));
  for (Tensor& s : scratch_) s = arenas.activations->Allocate({largest});
}

void ResNeXtFpn::Forward(const Tensor& images, const Tensor& workspace) {
  images_ = images;
  stem_.Forward(images, workspace);
  ops::MaxPoolForward(pool_, stem_.output(), pooled_);
  for (Block& b : blocks_) {
    b.conv1.Forward(b.input, workspace);
    b.conv2.Forward(b.conv1.output(), workspace);
    if (b.has_down) b.down.Forward(b.input, workspace);
    b.conv3.Forward(b.conv2.output(), workspace, b.has_down ? b.down.output() : b.input);
  }
  for (int i = 0; i < 3; ++i) inner_[i].Forward(0, c_[i], workspace);
  // Top-down: each lateral plus the level above, resized to it.
  const Tensor* above = &inner_[2].output(0);
  for (int i = 1; i >= 0; --i) {
    const Tensor up = layers::ViewAs(upsampled_, merged_[i]);
    ops::UpsampleNearest(*above, up);
    ops::Add(inner_[i].output(0), up, merged_[i]);
    above = &merged_[i];
  }
  layer_[2].Forward(0, inner_[2].output(0), workspace);
  for (int i = 0; i < 2; ++i) layer_[i].Forward(0, merged_[i], workspace);
  p6_.Forward(0, features_[2], workspace);
  ops::ReluForward(p6_.output(0), relu_p6_);
  p7_.Forward(0, relu_p6_, workspace);
}

void ResNeXtFpn::Backward(std::span<const Tensor> dfeatures, const Tensor& workspace) {
  MLPERF_CHECK(dfeatures.size() == kLevels);
  // P7 <- relu(P6) <- P6 <- P5: P6's and P5's gradients gather theirs.
  const Tensor d_relu_p6 = layers::ViewAs(dtmp_, relu_p6_);
  p7_.Backward(0, relu_p6_, dfeatures[4], d_relu_p6, workspace, false);
  ops::ReluBackward(relu_p6_, d_relu_p6, d_relu_p6);
  ops::Add(dfeatures[3], d_relu_p6, dfeatures[3]);
  const Tensor d_p5 = layers::ViewAs(dtmp_, features_[2]);
  p6_.Backward(0, features_[2], dfeatures[3], d_p5, workspace, false);
  ops::Add(dfeatures[2], d_p5, dfeatures[2]);
  // The outputs' convolutions, then the top-down path from P3 up.
  layer_[2].Backward(0, inner_[2].output(0), dfeatures[2], dinner_top_, workspace, false);
  for (int i = 0; i < 2; ++i)
    layer_[i].Backward(0, merged_[i], dfeatures[i], dmerged_[i], workspace, false);
  for (int i = 0; i < 2; ++i) {
    const Tensor& above = i == 0 ? merged_[1] : inner_[2].output(0);
    const Tensor& d_above = i == 0 ? dmerged_[1] : dinner_top_;
    inner_[i].Backward(0, c_[i], dmerged_[i], dc_[i], workspace, false);
    const Tensor d_up = layers::ViewAs(dtmp_, above);
    ops::UpsampleNearestBackward(dmerged_[i], d_up);
    ops::Add(d_above, d_up, d_above);
  }
  inner_[2].Backward(0, c_[2], dinner_top_, dc_[2], workspace, false);

  // The body, from C5 down to the first trainable stage.
  if (config_.trainable_layers == 0) return;
  Tensor& grad = scratch_[0];
  ops::CopyBytes(grad.data(), grad.device(), dc_[2].data(), dc_[2].device(), dc_[2].bytes());
  const int first = 5 - config_.trainable_layers;  // 0: the stem too
  for (auto it = blocks_.rbegin(); it != blocks_.rend(); ++it) {
    if (it->stage < first) break;
    const bool first_block = std::next(it) == blocks_.rend() || std::next(it)->stage != it->stage;
    // The first trainable block's input gradient feeds nothing frozen.
    const bool need_dx = !(first_block && it->stage == first);
    BackwardBlock(*it, need_dx, workspace);
    if (first_block && it->stage - 1 >= 2 && it->stage - 1 >= first) {
      const Tensor g = layers::ViewAs(grad, dc_[it->stage - 3]);
      ops::Add(g, dc_[it->stage - 3], g);
    }
  }
  if (first == 0) {
    const Tensor d_stem = layers::ViewAs(scratch_[1], stem_.output());
    ops::MaxPoolBackward(pool_, stem_.output(), layers::ViewAs(grad, pooled_), d_stem);
    stem_.Backward(images_, d_stem, scratch_[2], Tensor(), workspace);
  }
}

void ResNeXtFpn::BackwardBlock(Block& b, bool need_dx, const Tensor& workspace) {
  const Tensor& grad = scratch_[0];
  const Tensor &s1 = scratch_[1], &s2 = scratch_[2], &s3 = scratch_[3];
  b.conv3.Backward(b.conv2.output(), grad, s1, s2, workspace);  // grad: now past the ReLU
  b.conv2.Backward(b.conv1.output(), s2, s1, s3, workspace);
  b.conv1.Backward(b.input, s3, s1, need_dx ? s2 : Tensor(), workspace);
  if (b.has_down) b.down.Backward(b.input, grad, s1, need_dx ? s3 : Tensor(), workspace);
  if (!need_dx) return;
  const Tensor out = layers::ViewAs(grad, b.input);
  const Tensor main = layers::ViewAs(s2, b.input);
  // The shortcut's gradient: the projection's, or the output's itself.
  ops::Add(main, layers::ViewAs(b.has_down ? s3 : grad, b.input), out);
}

int64_t ResNeXtFpn::workspace_elements() const {
  int64_t most = stem_.workspace_elements();
  for (const Block& b : blocks_)
    for (const layers::FrozenConvBn* c : {&b.conv1, &b.conv2, &b.conv3, &b.down})
      if (c != &b.down || b.has_down) most = std::max(most, c->workspace_elements());
  for (const layers::ConvBias* c :
       {&inner_[0], &inner_[1], &inner_[2], &layer_[0], &layer_[1], &layer_[2], &p6_, &p7_})
    most = std::max(most, c->workspace_elements());
  return most;
}

}  // namespace mlperf::models
