#include "reference/models/resnet.h"

#include <algorithm>
#include <cstring>

#include "fmt/format.h"
#include "reference/core/init.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cpu/pool.h"

namespace mlperf::models {

using core::Tensor;

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::span<float> FlatView(const std::optional<core::Arena>& arena) {
  return {static_cast<float*>(arena->base()), arena->used() / sizeof(float)};
}

}  // namespace

ResNet::ResNet(const ResNetConfig& config, int64_t batch_size)
    : config_(config),
      batch_(batch_size),
      bn_{.epsilon = config.bn_epsilon, .momentum = config.bn_momentum} {
  MLPERF_CHECK(batch_size > 0 && config.base_width > 0 && config.num_classes > 0);
  MLPERF_CHECK(config.layout == core::Layout::kNCHW || config.layout == core::Layout::kNHWC);
  core::Arena p = core::Arena::Measuring(), g = core::Arena::Measuring();
  core::Arena b = core::Arena::Measuring(), a = core::Arena::Measuring();
  Build({&p, &g, &b, &a});
  params_.emplace(core::Device::kCpu, p.used());
  grads_.emplace(core::Device::kCpu, g.used());
  buffers_.emplace(core::Device::kCpu, b.used());
  activations_.emplace(core::Device::kCpu, a.used());
  // Zero the alignment padding between tensors too, so that the flat spans
  // compare and checkpoint deterministically.
  for (core::Arena* arena : {&*params_, &*grads_, &*buffers_})
    std::memset(arena->base(), 0, arena->capacity());
  Build({&*params_, &*grads_, &*buffers_, &*activations_});
  Initialize(0);
}

void ResNet::Build(const ModelArenas& arenas) {
  registry_ = Registry();
  blocks_.clear();
  const core::Layout layout = config_.layout;
  const int64_t n = batch_, size = config_.image_size, base = config_.base_width;
  core::Arena& acts = *arenas.activations;
  input_ = acts.Allocate(ActivationShape(layout, n, 3, size, size), core::DType::kF32, layout);

  // Reference: ZeroPad 3 then a "valid" 7x7/2, i.e. symmetric padding 3 in
  // both modes.
  const ConvGeometry stem = Conv2d(n, 3, size, size, base, 7, 7, 2, 3);
  stem_.Allocate(stem, layout, true, "conv1", "bn1", arenas, &registry_);
  pool_ = Conv2d(n, base, stem.out(1), stem.out(2), base, 3, 3, 2, 1);
  if (config_.padding == PaddingMode::kTfSame) SetSamePadding(&pool_);
  int64_t h = pool_.out(1), w = pool_.out(2), channels = base;
  pooled_ = acts.Allocate(ActivationShape(layout, n, base, h, w), core::DType::kF32, layout);

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
  fc_w_ = arenas.params->AllocateZeroed({classes, channels});
  dfc_w_ = arenas.grads->AllocateZeroed({classes, channels});
  registry_.parameters.push_back({.name = "fc.weight", .value = fc_w_, .grad = dfc_w_});
  fc_b_ = arenas.params->AllocateZeroed({classes});
  dfc_b_ = arenas.grads->AllocateZeroed({classes});
  registry_.parameters.push_back(
      {.name = "fc.bias", .value = fc_b_, .grad = dfc_b_, .bias = true});
  logits_ = acts.Allocate({n, classes});
  dlogits_ = acts.Allocate({n, classes});
  labels_ = acts.Allocate({n}, core::DType::kI32);
  loss_ = acts.Allocate({1});
  for (Tensor& t : grad_scratch_) t = acts.Allocate({largest});
  workspace_ = acts.Allocate({std::max<int64_t>(workspace, 1)});
}

int64_t ResNet::num_parameters() const {
  int64_t total = 0;
  for (const Parameter& p : registry_.parameters) total += p.value.numel();
  return total;
}

void ResNet::Initialize(uint64_t seed) {
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const Parameter& p = registry_.parameters[i];
    const core::RngStream rng{.seed = seed, .offset = static_cast<uint64_t>(i)};
    if (p.fan_in > 0) {
      core::HeNormalTruncated(p.value, p.fan_in, rng);
    } else if (p.batch_norm) {
      core::FillConstant(p.value, EndsWith(p.name, ".weight") ? 1.0f : 0.0f);
    } else if (p.bias) {
      core::FillConstant(p.value, 0.0f);
    } else {
      core::FillNormal(p.value, 0.0f, 0.01f, rng);  // fc.weight
    }
  }
  for (const NamedBuffer& b : registry_.buffers)
    core::FillConstant(b.value, EndsWith(b.name, ".running_var") ? 1.0f : 0.0f);
  num_batches_tracked_ = 0;
}

void ResNet::Forward(bool training) {
  stem_.Forward(input_, training, bn_, workspace_);
  cpu::MaxPoolForward(pool_, stem_.output(), pooled_);
  const Tensor* x = &pooled_;
  for (Bottleneck& block : blocks_) {
    block.Forward(*x, training, bn_, workspace_);
    x = &block.output();
  }
  cpu::GlobalAvgPoolForward(*x, features_);
  cpu::LinearForward(features_, fc_w_, fc_b_, logits_);
}

float ResNet::ForwardTrain(const float* images, const int32_t* labels, float label_smoothing) {
  std::memcpy(input_.data(), images, input_.bytes());
  std::memcpy(labels_.data(), labels, labels_.bytes());
  Forward(/*training=*/true);
  ++num_batches_tracked_;
  // Mean over the local batch; averaging gradients over equal-sized ranks
  // then gives the reference's sum / global batch.
  cpu::SoftmaxCrossEntropy(label_smoothing, static_cast<float>(batch_), logits_, labels_, loss_,
                           dlogits_);
  return loss_.f32()[0];
}

void ResNet::Backward() {
  cpu::LinearBackward(features_, fc_w_, dlogits_, dfeatures_, dfc_w_, dfc_b_);
  Tensor dout = grad_scratch_[0], scratch = grad_scratch_[1], dx = grad_scratch_[2];
  cpu::GlobalAvgPoolBackward(dfeatures_, ViewAs(dout, blocks_.back().output()));
  for (size_t i = blocks_.size(); i-- > 0;) {
    const Tensor& x = i > 0 ? blocks_[i - 1].output() : pooled_;
    blocks_[i].Backward(x, dout, scratch, dx, workspace_);
    // The input gradient is the next block's output gradient.
    std::swap(dout, dx);
  }
  const Tensor dstem = ViewAs(scratch, stem_.output());
  cpu::MaxPoolBackward(pool_, stem_.output(), ViewAs(dout, pooled_), dstem);
  stem_.Backward(input_, dstem, dx, Tensor(), workspace_);
}

int64_t ResNet::EvaluateBatch(const float* images, const int32_t* labels, int count) {
  MLPERF_CHECK(count >= 0 && count <= batch_);
  const size_t used = static_cast<size_t>(count) * image_elements();
  std::memcpy(input_.data(), images, used * sizeof(float));
  // Samples are independent in inference mode; zeros keep the padding finite.
  std::memset(input_.f32() + used, 0, input_.bytes() - used * sizeof(float));
  Forward(/*training=*/false);
  int64_t correct = 0;
  const int64_t classes = config_.num_classes;
  for (int i = 0; i < count; ++i) {
    const float* z = logits_.f32() + i * classes;
    const int64_t guess = std::max_element(z, z + classes) - z;
    correct += labels[i] >= 0 && guess == labels[i];
  }
  return correct;
}

std::span<float> ResNet::parameters() { return FlatView(params_); }
std::span<float> ResNet::gradients() { return FlatView(grads_); }
std::span<float> ResNet::buffers() { return FlatView(buffers_); }

std::vector<TensorSlice> ResNet::slices() const {
  const float* base = static_cast<const float*>(params_->base());
  std::vector<TensorSlice> out;
  for (const Parameter& p : registry_.parameters)
    out.push_back({p.value.f32() - base, p.value.numel(), p.batch_norm || p.bias});
  return out;
}

std::vector<std::string> ResNet::parameter_names() const {
  std::vector<std::string> names;
  for (const Parameter& p : registry_.parameters) names.push_back(p.name);
  return names;
}

const Tensor& ResNet::stage_output(int s) const {
  MLPERF_CHECK(s >= 0 && s <= 4);
  return s == 0 ? pooled_ : blocks_[last_block_of_stage_[s - 1]].output();
}

absl::Status ResNet::SaveSafetensors(const std::string& path) const {
  std::vector<io::NamedTensor> named;
  for (const Parameter& p : registry_.parameters) named.push_back({p.name, p.value});
  for (const NamedBuffer& b : registry_.buffers) named.push_back({b.name, b.value});
  // torchvision keeps one int64 scalar per BN; a strict load_state_dict wants them.
  std::vector<int64_t> counts(registry_.batch_norms.size(), num_batches_tracked_);
  for (size_t i = 0; i < counts.size(); ++i)
    named.push_back({registry_.batch_norms[i] + ".num_batches_tracked",
                     Tensor(&counts[i], core::Shape(), core::DType::kI64)});
  return io::SaveSafetensors(path, named, {{"format", "pt"}});
}

absl::Status ResNet::LoadSafetensors(const std::string& path) {
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(path);
  if (!file.ok()) return file.status();
  auto copy = [&](const std::string& name, const Tensor& dst) -> absl::Status {
    absl::Status s = file->CopyTo(name, dst);
    if (!s.ok()) return absl::InvalidArgumentError(fmt::format("{}: {}", path, std::string(s.message())));
    return absl::OkStatus();
  };
  for (const Parameter& p : registry_.parameters)
    if (absl::Status s = copy(p.name, p.value); !s.ok()) return s;
  for (const NamedBuffer& b : registry_.buffers)
    if (absl::Status s = copy(b.name, b.value); !s.ok()) return s;
  // Optional: files from older torch versions or other tools may lack it.
  const std::string counter = registry_.batch_norms.front() + ".num_batches_tracked";
  if (file->tensors().count(counter) != 0) {
    int64_t count = 0;
    if (absl::Status s = copy(counter, Tensor(&count, core::Shape(), core::DType::kI64)); !s.ok())
      return s;
    num_batches_tracked_ = count;
  }
  return absl::OkStatus();
}

}  // namespace mlperf::models
