// ResNet-50 v1.5 (MLPerf reference image_classification/tensorflow2
// resnet_model.py; torchvision's resnet50 has the same layers): stem conv
// 7x7/2 -> BN -> ReLU -> max pool 3x3/2, four stages of bottlenecks
// (stride in the 3x3, projection shortcut on each stage's first block),
// global average pool, fully connected with bias. 25,557,032 parameters at
// base width 64 with 1000 classes. Width, depth and image size are
// configuration, so small members of the family run the same code.
//
// Parameters, gradients, BN running statistics and activations each live in
// one arena allocated in the constructor, on config.device; a training step
// allocates nothing. A CUDA model is initialised on the host and copied, so
// CPU and GPU models with the same seed start bitwise equal.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "reference/core/arena.h"
#include "reference/core/tensor.h"
#include "reference/io/safetensors.h"
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
  // Where every arena lives; kernels follow the tensors (ops::). kCuda needs
  // a CUDA build and a device.
  core::Device device = core::Device::kCpu;
  // Arithmetic type of activations and convolutions. Parameters, gradients,
  // optimizer state and BN statistics are fp32 whatever this says. Only kF32
  // is implemented so far (checked).
  core::DType compute_dtype = core::DType::kF32;
};

class ResNet {
 public:
  ResNet(const ResNetConfig& config, int64_t batch_size);
  ResNet(const ResNet&) = delete;
  ResNet& operator=(const ResNet&) = delete;

  ~ResNet();
  const ResNetConfig& config() const { return config_; }
  core::Device device() const { return config_.device; }
  int64_t batch_size() const { return batch_; }
  // Elements of one image / of the whole input batch (3 channels).
  int64_t image_elements() const { return 3 * int64_t{config_.image_size} * config_.image_size; }
  int64_t num_parameters() const;

  // Reference init: truncated He normal convs, FC weight N(0, 0.01), FC bias
  // 0, BN gamma 1 / beta 0, running mean 0 / variance 1. Each tensor draws
  // from its own Philox stream (seed, index in parameter order).
  void Initialize(uint64_t seed);

  // images: batch_size images in config.layout; labels 0-based, both in
  // host memory (a CUDA model stages them through pinned memory). Training
  // mode (batch statistics; running statistics updated). Returns the mean
  // label-smoothed cross-entropy over the batch (on the GPU this waits for
  // the forward pass). images == nullptr (labels too) trains again on the
  // batch already in the model (benchmarks, device-resident data).
  float ForwardTrain(const float* images, const int32_t* labels, float label_smoothing);
  // The same without reading the loss back: it stays in loss_tensor(), a
  // 1-element tensor on the model's device, so a GPU step needs no host
  // round-trip until the caller asks for it.
  void ForwardTrainAsync(const float* images, const int32_t* labels, float label_smoothing);
  const core::Tensor& loss_tensor() const { return loss_; }
  // Gradients of the last ForwardTrain's loss; overwrites the gradient arena.
  // After each bottleneck (and the FC layer, and the stem) it calls the
  // gradient-ready hook, if set, with the arena offset from which all
  // gradients up to the end are final: parameters are laid out in forward
  // order, so that offset only decreases. Data-parallel training starts the
  // all-reduce of completed buckets there, overlapping the rest of Backward.
  void Backward();
  using GradientsReadyHook = std::function<void(int64_t ready_from)>;
  void set_gradients_ready_hook(GradientsReadyHook hook) { gradients_ready_ = std::move(hook); }
  // Inference mode (running statistics). Only the first `count` <= batch_size
  // images and labels are read; labels < 0 (padding) never count as correct.
  // Returns the number of correct top-1 predictions.
  int64_t EvaluateBatch(const float* images, const int32_t* labels, int count);

  // Flat arenas in torchvision state_dict order (alignment padding between
  // tensors stays zero). gradients() has the layout of parameters(). The
  // spans are over the model's device memory: host-readable only for a CPU
  // model. The *ToHost / *FromHost calls copy whole arenas either way (and
  // wait for the copy) on every device.
  std::span<float> parameters();
  std::span<float> gradients();
  std::span<float> buffers();  // BN running mean / variance
  std::vector<float> ParametersToHost() const;
  std::vector<float> GradientsToHost() const;
  std::vector<float> BuffersToHost() const;
  void ParametersFromHost(std::span<const float> values);
  void BuffersFromHost(std::span<const float> values);
  // Any activation of this model (logits(), stage_output()) copied to the host.
  std::vector<float> ToHost(const core::Tensor& t) const;
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
  // Copies images and labels (host) into input_ and labels_.
  void Upload(const float* images, size_t image_count, const int32_t* labels, size_t label_count);
  // Host tensors with the registry's shapes over host copies of the arenas,
  // for checkpoints of a device model.
  std::vector<io::NamedTensor> HostViews(std::vector<float>& params,
                                         std::vector<float>& buffers) const;
  void NotifyGradientsReady(int64_t ready_from) const {
    if (gradients_ready_) gradients_ready_(ready_from);
  }

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
  // Gradient arena offset of each bottleneck's first parameter, and of fc.weight.
  std::vector<int64_t> block_grad_offset_;
  int64_t fc_grad_offset_ = 0;
  GradientsReadyHook gradients_ready_;
  // Pinned host staging for the per-step upload of a CUDA model.
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  core::Tensor input_, pooled_, features_, logits_, dlogits_, dfeatures_, labels_, loss_;
  core::Tensor fc_w_, fc_b_, dfc_w_, dfc_b_;
  // Three gradient buffers of the largest activation size, rotated through
  // the blocks on the way back, and the convolutions' shared scratch.
  std::array<core::Tensor, 3> grad_scratch_;
  core::Tensor workspace_;
};

}  // namespace mlperf::models
