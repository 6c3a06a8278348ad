#include "reference/models/resnet.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "fmt/format.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::models {

using core::Tensor;

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

ResNet::ResNet(const ResNetConfig& config, int64_t batch_size, uint64_t seed)
    : Model(config.device, batch_size),
      config_(config),
      bn_{.epsilon = config.bn_epsilon, .momentum = config.bn_momentum} {
  MLPERF_CHECK(config.base_width > 0 && config.num_classes > 0);
  MLPERF_CHECK(config.layout == core::Layout::kNCHW || config.layout == core::Layout::kNHWC);
  AllocateArenas([this](const layers::ModelArenas& arenas) { Build(arenas); });
  // Offsets for the gradient-ready hook, now that the real arenas exist.
  block_grad_offset_.clear();
  for (size_t first : block_first_parameter_) block_grad_offset_.push_back(GradientOffset(first));
  fc_grad_offset_ = GradientOffset(fc_parameter_);
  if (device() != core::Device::kCpu)
    staging_ = std::make_unique<UploadStaging>(input_.bytes() + labels_.bytes());
  Initialize(seed);
}

ResNet::ResNet(const ResNetConfig& config, int64_t batch_size, MeasureOnly)
    : Model(core::Device::kCpu, batch_size),
      config_(config),
      bn_{.epsilon = config.bn_epsilon, .momentum = config.bn_momentum} {
  config_.device = core::Device::kCpu;
  measured_bytes_ = static_cast<int64_t>(
      MeasureArenas(core::Device::kCpu, [this](const layers::ModelArenas& a) { Build(a); }));
}

int64_t ResNet::ArenaBytes(const ResNetConfig& config, int64_t batch_size) {
  return ResNet(config, batch_size, MeasureOnly{}).measured_bytes_;
}

ResNet::~ResNet() = default;

void ResNet::Build(const layers::ModelArenas& arenas) {
  blocks_.clear();
  block_first_parameter_.clear();
  const core::Layout layout = config_.layout;
  const int64_t n = batch_size(), size = config_.image_size, base = config_.base_width;
  core::Arena& acts = *arenas.activations;
  input_ =
      acts.Allocate(layers::ActivationShape(layout, n, 3, size, size), core::DType::kF32, layout);

  // Reference: ZeroPad 3 then a "valid" 7x7/2, i.e. symmetric padding 3 in
  // both modes.
  const ConvGeometry stem = Conv2d(n, 3, size, size, base, 7, 7, 2, 3);
  stem_.Allocate(stem, layout, true, "conv1", "bn1", arenas, &registry_);
  pool_ = Conv2d(n, base, stem.out(1), stem.out(2), base, 3, 3, 2, 1);
  if (config_.padding == layers::PaddingMode::kTfSame) SetSamePadding(&pool_);
  int64_t h = pool_.out(1), w = pool_.out(2), channels = base;
  // Stored activations (precision.h): the stem's pooled output, the units'
  // outputs (layers::ConvBn) and the gradient buffers.
  const core::DType stored =
      ops::ActivationStorageType(acts.device(), layout == core::Layout::kNHWC);
  pooled_ = acts.Allocate(layers::ActivationShape(layout, n, base, h, w), stored, layout);

  int64_t largest = n * base * stem.out(1) * stem.out(2);
  int64_t workspace = stem_.workspace_elements();
  int total_blocks = 0;
  for (int s = 0; s < 4; ++s) {
    MLPERF_CHECK(config_.blocks[s] >= 1);
    total_blocks += config_.blocks[s];
  }
  blocks_.resize(total_blocks);
  int index = 0;
  for (int s = 0; s < 4; ++s) {
    const int64_t width = base << s;
    for (int b = 0; b < config_.blocks[s]; ++b, ++index) {
      // conv2_x keeps the resolution; later stages halve it in their first block.
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      Bottleneck& block = blocks_[index];
      block_first_parameter_.push_back(registry_.parameters.size());
      block.Allocate(n, channels, width, h, w, stride, /*projection=*/b == 0, config_.padding,
                     layout, fmt::format("layer{}.{}", s + 1, b), arenas, &registry_);
      // Largest tensor a gradient buffer must hold: the block's input, its
      // first conv's output (input resolution) or its output.
      largest = std::max({largest, n * channels * h * w, n * width * h * w,
                          n * 4 * width * block.out_h() * block.out_w()});
      workspace = std::max(workspace, block.workspace_elements());
      h = block.out_h();
      w = block.out_w();
      channels = 4 * width;
    }
    last_block_of_stage_[s] = index - 1;
  }

  features_ = acts.Allocate({n, channels});
  dfeatures_ = acts.Allocate({n, channels});
  const int64_t classes = config_.num_classes;
  const layers::Parameter fc_w =
      layers::AddParameter(arenas, &registry_, {classes, channels}, {.name = "fc.weight"});
  const layers::Parameter fc_b =
      layers::AddParameter(arenas, &registry_, {classes}, {.name = "fc.bias", .bias = true});
  fc_w_ = fc_w.value;
  dfc_w_ = fc_w.grad;
  fc_b_ = fc_b.value;
  dfc_b_ = fc_b.grad;
  fc_parameter_ = registry_.parameters.size() - 2;
  logits_ = acts.Allocate({n, classes});
  predicted_ = acts.Allocate({n}, core::DType::kI32);
  dlogits_ = acts.Allocate({n, classes});
  labels_ = acts.Allocate({n}, core::DType::kI32);
  loss_ = acts.Allocate({1});
  for (Tensor& t : grad_scratch_) t = acts.Allocate({largest}, stored);
  workspace_ = acts.Allocate({std::max<int64_t>(workspace, 1)});
}

void ResNet::Initialize(uint64_t seed) {
  // Always drawn on the host (the initialisers are host code), then copied:
  // a device model starts bitwise equal to a CPU model with the same seed.
  std::vector<float> params(parameters().size(), 0.0f);
  std::vector<float> buffers(this->buffers().size(), 0.0f);
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    const Tensor value = HostParameter(p.value, params);
    const core::RngStream rng{.seed = seed, .offset = static_cast<uint64_t>(i)};
    if (p.fan_in > 0) {
      core::HeNormalTruncated(value, p.fan_in, rng);
    } else if (p.batch_norm) {
      core::FillConstant(value, EndsWith(p.name, ".weight") ? 1.0f : 0.0f);
    } else if (p.bias) {
      core::FillConstant(value, 0.0f);
    } else {
      core::FillNormal(value, 0.0f, 0.01f, rng);  // fc.weight
    }
  }
  for (const layers::NamedBuffer& b : registry_.buffers)
    core::FillConstant(HostBuffer(b.value, buffers),
                       EndsWith(b.name, ".running_var") ? 1.0f : 0.0f);
  ParametersFromHost(params);
  BuffersFromHost(buffers);
  num_batches_tracked_ = 0;
}

void ResNet::Upload(const float* images, core::Device images_on, size_t image_count,
                    const int32_t* labels, size_t label_count) {
  if (images == nullptr) return;  // the batch already in input_ / labels_
  MLPERF_CHECK(images_on == core::Device::kCpu || images_on == device());
  const size_t image_bytes = image_count * sizeof(float),
               label_bytes = label_count * sizeof(int32_t);
  if (device() == core::Device::kCpu) {
    ops::ParallelHostCopy(input_.data(), images, image_bytes);
    if (label_bytes > 0) std::memcpy(labels_.data(), labels, label_bytes);
    return;
  }
  UploadStaging::Part parts[2];
  size_t count = 0;
  if (images_on == core::Device::kCpu) {
    parts[count++] = {input_.data(), images, image_bytes};
  } else {  // decoded on the device
    ops::CopyBytes(input_.data(), device(), images, images_on, image_bytes);
  }
  if (label_bytes > 0) parts[count++] = {labels_.data(), labels, label_bytes};
  staging_->Upload(device(), std::span(parts, count));
}

void ResNet::Forward(bool training) {
  stem_.Forward(input_, training, bn_, workspace_);
  ops::MaxPoolForward(pool_, stem_.output(), pooled_);
  const Tensor* x = &pooled_;
  for (Bottleneck& block : blocks_) {
    block.Forward(*x, training, bn_, workspace_);
    x = &block.output();
  }
  ops::GlobalAvgPoolForward(*x, features_);
  ops::LinearForward(features_, fc_w_, fc_b_, logits_);
}

Batch ResNet::InputBatch(const float* images, const int32_t* labels, int64_t count) const {
  MLPERF_CHECK(count >= 0 && count <= batch_size());
  const core::Shape image_shape =
      layers::ActivationShape(config_.layout, count, 3, config_.image_size, config_.image_size);
  Batch b{.count = count};
  if (images == nullptr) return b;  // the batch already in the model
  b.inputs.emplace_back(const_cast<float*>(images), image_shape, core::DType::kF32);
  b.inputs.emplace_back(const_cast<int32_t*>(labels), core::Shape{count}, core::DType::kI32);
  return b;
}

void ResNet::UploadTrainingBatch(const Batch& batch) {
  if (batch.inputs.empty()) return;
  MLPERF_CHECK(batch.inputs.size() == 2 && batch.count == batch_size());
  MLPERF_CHECK(batch.inputs[0].numel() == input_.numel());
  Upload(batch.inputs[0].f32(), batch.inputs[0].device(), static_cast<size_t>(input_.numel()),
         static_cast<const int32_t*>(batch.inputs[1].data()), static_cast<size_t>(batch_size()));
}

void ResNet::ForwardTrainAsync(const Batch& batch) {
  UploadTrainingBatch(batch);
  ForwardLoss(config_.label_smoothing);
}

float ResNet::ForwardTrain(const float* images, const int32_t* labels, float label_smoothing) {
  Upload(images, core::Device::kCpu, static_cast<size_t>(input_.numel()), labels,
         static_cast<size_t>(batch_size()));
  ForwardLoss(label_smoothing);
  float loss = 0.0f;
  ops::CopyBytes(&loss, core::Device::kCpu, loss_.data(), device(), sizeof(float));
  return loss;
}

void ResNet::ForwardLoss(float label_smoothing) {
  Forward(/*training=*/true);
  ++num_batches_tracked_;
  // Mean over the local batch; averaging gradients over equal-sized ranks
  // then gives the reference's sum / global batch.
  ops::SoftmaxCrossEntropy(label_smoothing, static_cast<float>(batch_size()), logits_, labels_,
                           loss_, dlogits_);
}

void ResNet::Backward() {
  ScaleLossGradient(dlogits_);
  ops::LinearBackward(features_, fc_w_, dlogits_, dfeatures_, dfc_w_, dfc_b_);
  NotifyGradientsReady(fc_grad_offset_);
  Tensor dout = grad_scratch_[0], scratch = grad_scratch_[1], dx = grad_scratch_[2], addend;
  const Tensor dlast = layers::ViewAs(dout, blocks_.back().output());
  ops::GlobalAvgPoolBackward(dfeatures_, dlast);
  ops::RoundStored(dlast);
  for (size_t i = blocks_.size(); i-- > 0;) {
    const Tensor& x = i > 0 ? blocks_[i - 1].output() : pooled_;
    blocks_[i].Backward(x, dout, addend, scratch, dx, workspace_);
    NotifyGradientsReady(block_grad_offset_[i]);
    // The input gradient, dx + dout, is the block before's output gradient
    // and addend; that block's dx reuses the addend's buffer.
    addend = dout;
    dout = dx;
    dx = addend;
  }
  const Tensor dpooled = layers::ViewAs(dout, pooled_);
  ops::AccumulateStored(layers::ViewAs(addend, pooled_), dpooled);
  const Tensor dstem = layers::ViewAs(scratch, stem_.output());
  ops::MaxPoolBackward(pool_, stem_.output(), dpooled, dstem);
  ops::RoundStored(dstem);  // overlapping windows sum
  stem_.Backward(input_, dstem, dx, Tensor(), workspace_);
  NotifyGradientsReady(0);
}

int64_t ResNet::EvaluateBatch(const float* images, const int32_t* labels, int count,
                              core::Device images_on) {
  MLPERF_CHECK(count >= 0 && count <= batch_size());
  const size_t used = static_cast<size_t>(count) * image_elements();
  Upload(images, images_on, used, nullptr, 0);
  // Samples are independent in inference mode; zeros keep the padding finite.
  ops::ZeroBytes(input_.f32() + used, device(), input_.bytes() - used * sizeof(float));
  Forward(/*training=*/false);
  // The predictions are found where the logits are; only they come back.
  ops::ArgmaxRows(logits_, predicted_);
  std::vector<int32_t> predicted(static_cast<size_t>(batch_size()));
  ops::CopyBytes(predicted.data(), core::Device::kCpu, predicted_.data(), device(),
                 predicted_.bytes());
  int64_t correct = 0;
  for (int i = 0; i < count; ++i) correct += labels[i] >= 0 && predicted[i] == labels[i];
  return correct;
}

MetricSums ResNet::EvaluateBatch(const Batch& batch) {
  MLPERF_CHECK(batch.inputs.size() == 2);
  const int64_t correct =
      EvaluateBatch(batch.inputs[0].f32(), static_cast<const int32_t*>(batch.inputs[1].data()),
                    static_cast<int>(batch.count), batch.inputs[0].device());
  return {.numerator = static_cast<double>(correct),
          .denominator = static_cast<double>(batch.count)};
}

OwnedBatch ResNet::SyntheticBatch() const {
  OwnedBatch owned;
  const int64_t n = batch_size();
  const core::Tensor images = owned.Add(
      layers::ActivationShape(config_.layout, n, 3, config_.image_size, config_.image_size),
      core::DType::kF32);
  const core::Tensor labels = owned.Add({n}, core::DType::kI32);
  float* x = images.f32();
  for (int64_t i = 0; i < images.numel(); ++i)
    x[i] = 255.0f * core::PhiloxUniform(/*seed=*/0x5eed, 0, static_cast<uint64_t>(i)) - 128.0f;
  int32_t* y = static_cast<int32_t*>(labels.data());
  for (int64_t i = 0; i < n; ++i)
    y[i] = static_cast<int32_t>(core::PhiloxBits(0x5eed, 1, static_cast<uint64_t>(i)) %
                                static_cast<uint32_t>(config_.num_classes));
  owned.batch.count = n;
  return owned;
}

const Tensor& ResNet::stage_output(int s) const {
  MLPERF_CHECK(s >= 0 && s <= 4);
  return s == 0 ? pooled_ : blocks_[last_block_of_stage_[s - 1]].output();
}

}  // namespace mlperf::models
