// ResNet-50 v1.5 (MLPerf reference image_classification/tensorflow2
// resnet_model.py; torchvision's resnet50 has the same layers): stem conv
// 7x7/2 -> BN -> ReLU -> max pool 3x3/2, four stages of bottlenecks
// (stride in the 3x3, projection shortcut on each stage's first block),
// global average pool, fully connected with bias. 25,557,032 parameters at
// base width 64 with 1000 classes. Width, depth and image size are
// configuration, so small members of the family run the same code.
//
// Parameters, gradients, BN running statistics and activations each live in
// one arena (models::Model) allocated in the constructor, on config.device; a
// training step allocates nothing. A CUDA model is initialised on the host and
// copied, so CPU and GPU models with the same seed start bitwise equal.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/norm_params.h"
#include "reference/layers/conv_norm.h"
#include "reference/models/model.h"
#include "reference/models/resnet_blocks.h"
#include "reference/models/upload_staging.h"

namespace mlperf::models {

struct ResNetConfig {
  int64_t base_width = 64;  // 64 = ResNet-50; stage widths base*{1,2,4,8}, expansion 4
  std::array<int, 4> blocks = {3, 4, 6, 3};
  int num_classes = 1000;
  int image_size = 224;
  core::Layout layout = core::Layout::kNCHW;  // kNCHW or kNHWC
  layers::PaddingMode padding = layers::PaddingMode::kTfSame;
  float bn_epsilon = 1e-5f;
  float bn_momentum = 0.1f;      // PyTorch convention (= Keras momentum 0.9)
  float label_smoothing = 0.1f;  // of the training loss (closed division: 0 or 0.1)
  // Where every arena lives; kernels follow the tensors (ops::). kCuda needs
  // a CUDA build and a device.
  core::Device device = core::Device::kCpu;
};

class ResNet final : public Model {
 public:
  // Inputs of a Batch: images [batch, 3, size, size] (or [batch, size, size,
  // 3] in kNHWC) fp32 and labels [batch] int32, 0-based; labels < 0 (eval
  // padding) never count as correct. Starts from Initialize(seed).
  ResNet(const ResNetConfig& config, int64_t batch_size, uint64_t seed = 0);
  ~ResNet() override;

  // Bytes of every arena of a model of `config` at `batch_size` (parameters,
  // gradients, buffers, activations and scratch), allocating nothing.
  static int64_t ArenaBytes(const ResNetConfig& config, int64_t batch_size);

  const ResNetConfig& config() const { return config_; }
  // Elements of one image (3 channels).
  int64_t image_elements() const { return 3 * int64_t{config_.image_size} * config_.image_size; }
  // A Batch over host images and labels (count <= batch_size images).
  Batch InputBatch(const float* images, const int32_t* labels, int64_t count) const;

  // Reference init: truncated He normal convs, FC weight N(0, 0.01), FC bias
  // 0, BN gamma 1 / beta 0, running mean 0 / variance 1. Each tensor draws
  // from its own Philox stream (seed, index in parameter order).
  void Initialize(uint64_t seed) override;
  // Mean label-smoothed (config.label_smoothing) cross-entropy over the
  // batch. A CUDA model stages the inputs through pinned memory.
  void ForwardTrainAsync(const Batch& batch) override;
  bool CapturableStep() const override { return true; }
  void UploadTrainingBatch(const Batch& batch) override;
  // The hook fires after the FC layer, after each bottleneck and after the stem.
  void Backward() override;
  // Top-1: correct predictions and images.
  MetricSums EvaluateBatch(const Batch& batch) override;
  // Mean-subtracted pixel range, labels spread over the classes (the
  // reference's --use_synthetic_data).
  OwnedBatch SyntheticBatch() const override;

  // The same with raw host arrays and an explicit label smoothing (tests).
  float ForwardTrain(const float* images, const int32_t* labels, float label_smoothing);
  // Returns the number of correct top-1 predictions among the first `count`.
  // The images may be on the model's device already (a device data path);
  // the labels are on the host.
  int64_t EvaluateBatch(const float* images, const int32_t* labels, int count,
                        core::Device images_on = core::Device::kCpu);
  using Model::EvaluateBatch;
  using Model::ForwardTrain;

  // Activations for inspection: logits [batch, classes] of the last forward,
  // and the output of stage s (0 = stem after the max pool, 1..4 = layer1..4).
  const core::Tensor& logits() const { return logits_; }
  const core::Tensor& stage_output(int s) const;

 private:
  struct MeasureOnly {};
  // Lays the model out on measuring arenas only (ArenaBytes).
  ResNet(const ResNetConfig& config, int64_t batch_size, MeasureOnly);
  void Build(const layers::ModelArenas& arenas);
  void Forward(bool training);
  void ForwardLoss(float label_smoothing);
  // Copies images (on the host or already on the model's device) and labels
  // (host) into input_ and labels_.
  void Upload(const float* images, core::Device images_on, size_t image_count,
              const int32_t* labels, size_t label_count);

  ResNetConfig config_;
  BatchNormParams bn_;

  layers::ConvBn stem_;
  ConvGeometry pool_;
  int64_t measured_bytes_ = 0;
  std::vector<Bottleneck> blocks_;
  std::array<int, 4> last_block_of_stage_{};
  // Indices of each bottleneck's first parameter and of fc.weight, and the
  // gradient-arena offsets the hook reports.
  std::vector<size_t> block_first_parameter_;
  size_t fc_parameter_ = 0;
  std::vector<int64_t> block_grad_offset_;
  int64_t fc_grad_offset_ = 0;
  // A CUDA model's per-step uploads.
  std::unique_ptr<UploadStaging> staging_;
  core::Tensor input_, pooled_, features_, logits_, dlogits_, dfeatures_, labels_;
  core::Tensor predicted_;  // int32 [batch]: evaluation's predicted classes
  core::Tensor fc_w_, fc_b_, dfc_w_, dfc_b_;
  // Three gradient buffers of the largest activation size, rotated through
  // the blocks on the way back, and the convolutions' shared scratch.
  std::array<core::Tensor, 3> grad_scratch_;
  core::Tensor workspace_;
};

}  // namespace mlperf::models
