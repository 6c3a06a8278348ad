// RetinaNet as the MLPerf reference configures it (its copy of torchvision's
// retinanet_resnext50_32x4d_fpn): the ResNeXt-FPN backbone
// (resnext_fpn.h), a classification and a box head shared over the five
// levels (four 3x3 convolutions with ReLU, then 9 * classes logits or
// 9 * 4 box offsets), the reference's anchors, and its loss: focal loss
// plus L1 box loss per image, averaged over the images
// (detection/losses.h). Detections come out post-processed as the
// reference does (detection/postprocess.h). Widths, depth, classes and
// the input size are configuration, so small members run the same code.
//
// Channels-first fp32 (no loss scaling). The loss and the post-processing run on
// the host; a CUDA model would copy the heads' outputs there (its kernels
// exist, but this model has not run on a GPU).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/detection/anchors.h"
#include "reference/detection/losses.h"
#include "reference/detection/postprocess.h"
#include "reference/layers/conv_bias.h"
#include "reference/models/model.h"
#include "reference/models/resnext_fpn.h"

namespace mlperf::models {

struct RetinaNetConfig {
  ResNeXtFpnConfig backbone;
  int num_classes = 264;  // the MLPerf OpenImages subset
  int head_convs = 4;
  int64_t max_boxes = 100;  // per image in a batch (the inputs' padding)
  detection::PostprocessConfig postprocess;
  core::Device device = core::Device::kCpu;
};

class RetinaNet final : public Model {
 public:
  // Inputs of a Batch: images [batch, 3, size, size] fp32 (resized and
  // normalised), boxes [batch, max_boxes, 4] fp32 (x1, y1, x2, y2 in the
  // input's frame) and labels [batch, max_boxes] int32 (0-based classes; a
  // negative label ends an image's boxes). Detection needs the images only.
  // A batch without inputs is the last one again.
  RetinaNet(const RetinaNetConfig& config, int64_t batch_size, uint64_t seed = 0);
  ~RetinaNet() override;

  // Bytes of every arena of a model of `config` at `batch_size`, allocating
  // nothing (the memory plan).
  static int64_t ArenaBytes(const RetinaNetConfig& config, int64_t batch_size);

  const RetinaNetConfig& config() const { return config_; }

  // As the reference's constructors draw: body convolutions Kaiming-normal
  // (fan out), frozen batch norms the identity, pyramid convolutions
  // Kaiming-uniform (a = 1), head convolutions N(0, 0.01), biases 0 but the
  // classification logits' -log(99) (prior 0.01).
  void Initialize(uint64_t seed) override;
  // The backbone's body from a checkpoint under torchvision's ResNet names
  // ("conv1.weight", "layer1.0.bn1.running_var", ...: the reference's
  // ImageNet-trained resnext50_32x4d state dict, PyTorch's own .pth as the
  // reference downloads it, or safetensors; "fc.*" and "num_batches_tracked"
  // are ignored). Every body tensor must be there, in its shape; a failed
  // load changes nothing.
  absl::Status LoadBackbone(const std::string& path);
  // The body under those names.
  absl::Status SaveBackbone(const std::string& path) const;
  // Classification plus box loss of the batch, as the reference sums them.
  void ForwardTrainAsync(const Batch& batch) override;
  void Backward() override;
  // An inference pass (run_benchmark's): Detect, and the detections' count
  // over the images. COCO mAP is no ratio of sums; its evaluator gathers
  // Detect's detections.
  MetricSums EvaluateBatch(const Batch& batch) override;
  // Mid-grey images with one box each.
  OwnedBatch SyntheticBatch() const override;

  // The post-processed detections of the first batch.count images, in the
  // input's frame.
  std::vector<detection::Detections> Detect(const Batch& batch);

  // The last training forward's two losses (the batch means).
  double classification_loss() const { return classification_loss_; }
  double regression_loss() const { return regression_loss_; }
  // Head outputs of the last forward, per level [batch, 9 * classes (or 4), H, W].
  const core::Tensor& logits(int level) const { return cls_final_.output(level); }
  const core::Tensor& box_regression(int level) const { return reg_final_.output(level); }
  const std::vector<detection::Box>& anchors() const { return anchors_; }

 private:
  struct MeasureOnly {};
  RetinaNet(const RetinaNetConfig& config, int64_t batch_size, MeasureOnly);
  void Build(const layers::ModelArenas& arenas);
  void Forward(const Batch& batch);
  // One head's backward over the levels; the first branch sets the
  // features' gradients, the second adds to them.
  void HeadsBackward(std::vector<layers::ConvBias>& convs, layers::ConvBias& final,
                     const std::array<core::Tensor, ResNeXtFpn::kLevels>& dout, bool first_branch);

  RetinaNetConfig config_;
  ResNeXtFpn backbone_;
  std::vector<layers::ConvBias> cls_convs_, reg_convs_;
  layers::ConvBias cls_final_, reg_final_;
  std::vector<detection::Box> anchors_;
  core::Tensor images_, workspace_;
  std::array<core::Tensor, ResNeXtFpn::kLevels> dlogits_, dregression_, dfeatures_;
  std::array<core::Tensor, 2> head_scratch_;
  core::Tensor dpart_;
  std::vector<detection::ImageTargets> targets_;
  double classification_loss_ = 0, regression_loss_ = 0;
  int64_t measured_bytes_ = 0;
};

}  // namespace mlperf::models
