// ResNet-50 v1.5 (MLPerf reference image_classification/tensorflow2
// resnet_model.py; torchvision's resnet50 has the same layers): stem conv
// 7x7/2 -> BN -> ReLU -> max pool 3x3/2, four stages of bottlenecks
// (stride in the 3x3, projection shortcut on each stage's first block),
// global average pool, fully connected with bias. 25,557,032 parameters at
// base width 64 with 1000 classes. Width, depth and image size are
// configuration, so small members of the family run the same code.
//
// Parameters, gradients, BN running statistics and activations each live in
// one arena allocated in the constructor; a training step allocates nothing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "reference/core/arena.h"
#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/optimizer_params.h"
#include "reference/models/resnet_layers.h"

namespace mlperf::models {

struct ResNetConfig {
  int64_t base_width = 64;  // 64 = ResNet-50; stage widths base*{1,2,4,8}, expansion 4
  std::array<int, 4> blocks = {3, 4, 6, 3};
  int num_classes = 1000;
  int image_size = 224;
  core::Layout layout = core::Layout::kNCHW;  // kNCHW or kNHWC
  PaddingMode padding = PaddingMode::kTfSame;
  float bn_epsilon = 1e-5f;
  float bn_momentum = 0.1f;  // PyTorch convention (= Keras momentum 0.9)
};

class ResNet {
 public:
  ResNet(const ResNetConfig& config, int64_t batch_size);
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  const ResNetConfig& config() const { return config_; }
  int64_t batch_size() const { return batch_; }
  // Elements of one image / of the whole input batch (3 channels).
  int64_t image_elements() const { return 3 * int64_t{config_.image_size} * config_.image_size; }
  int64_t num_parameters() const;

  // Reference init: truncated He normal convs, FC weight N(0, 0.01), FC bias
  // 0, BN gamma 1 / beta 0, running mean 0 / variance 1. Each tensor draws
  // from its own Philox stream (seed, index in parameter order).
  void Initialize(uint64_t seed);

  // images: batch_size images in config.layout; labels 0-based. Training
  // mode (batch statistics; running statistics updated). Returns the mean
  // label-smoothed cross-entropy over the batch.
  float ForwardTrain(const float* images, const int32_t* labels, float label_smoothing);
  // Gradients of the last ForwardTrain's loss; overwrites the gradient arena.
  void Backward();
  // Inference mode (running statistics). Only the first `count` <= batch_size
  // images and labels are read; labels < 0 (padding) never count as correct.
  // Returns the number of correct top-1 predictions.
  int64_t EvaluateBatch(const float* images, const int32_t* labels, int count);

  // Flat arenas in torchvision state_dict order (alignment padding between
  // tensors stays zero). gradients() has the layout of parameters().
  std::span<float> parameters();
  std::span<float> gradients();
  std::span<float> buffers();  // BN running mean / variance
  // One per parameter tensor, offsets into parameters(); excluded = BN gamma,
  // beta and the FC bias (the reference LARS skip list).
  std::vector<TensorSlice> slices() const;
  std::vector<std::string> parameter_names() const;  // "layer1.0.conv1.weight", ...
  const std::vector<Parameter>& parameter_tensors() const { return registry_.parameters; }
  const std::vector<NamedBuffer>& buffer_tensors() const { return registry_.buffers; }

  // Training forward passes so far (torchvision's BN num_batches_tracked).
  int64_t num_batches_tracked() const { return num_batches_tracked_; }
  void set_num_batches_tracked(int64_t n) { num_batches_tracked_ = n; }

  // Activations for inspection: logits [batch, classes] of the last forward,
  // and the output of stage s (0 = stem after the max pool, 1..4 = layer1..4).
  const core::Tensor& logits() const { return logits_; }
  const core::Tensor& stage_output(int s) const;

  // Parameters and BN buffers (plus num_batches_tracked, int64 scalars) under
  // torchvision names and shapes: conv weights OIHW, fc.weight [classes,
  // features]. A file written by torch's state_dict loads here and back.
  absl::Status SaveSafetensors(const std::string& path) const;
  absl::Status LoadSafetensors(const std::string& path);

 private:
  void Build(const ModelArenas& arenas);
  void Forward(bool training);

  ResNetConfig config_;
  int64_t batch_;
  cpu::BatchNormParams bn_;
  std::optional<core::Arena> params_, grads_, buffers_, activations_;
  Registry registry_;
  int64_t num_batches_tracked_ = 0;

  ConvBn stem_;
  ConvGeometry pool_;
  std::vector<Bottleneck> blocks_;
  std::array<int, 4> last_block_of_stage_{};
  core::Tensor input_, pooled_, features_, logits_, dlogits_, dfeatures_, labels_, loss_;
  core::Tensor fc_w_, fc_b_, dfc_w_, dfc_b_;
  // Three gradient buffers of the largest activation size, rotated through
  // the blocks on the way back, and the convolutions' shared scratch.
  std::array<core::Tensor, 3> grad_scratch_;
  core::Tensor workspace_;
};

}  // namespace mlperf::models
