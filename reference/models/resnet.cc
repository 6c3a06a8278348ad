#include "reference/models/resnet.h"

#include <algorithm>
#include <cstring>

#include "fmt/format.h"
#include "reference/core/init.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {

using core::Tensor;

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::span<float> FlatView(const std::optional<core::Arena>& arena) {
  return {static_cast<float*>(arena->base()), arena->used() / sizeof(float)};
}

// `t` (inside `arena`) at the same offset inside a host copy of the arena.
Tensor HostTwin(const Tensor& t, const core::Arena& arena, std::vector<float>& host) {
  const size_t offset = static_cast<size_t>(static_cast<const char*>(t.data()) -
                                            static_cast<const char*>(arena.base()));
  MLPERF_CHECK(offset + t.bytes() <= host.size() * sizeof(float));
  return Tensor(reinterpret_cast<char*>(host.data()) + offset, t.shape(), t.dtype(),
                core::Device::kCpu, t.layout());
}

std::vector<float> ArenaToHost(const core::Arena& arena) {
  std::vector<float> host(arena.used() / sizeof(float));
  ops::CopyBytes(host.data(), core::Device::kCpu, arena.base(), arena.device(), arena.used());
  return host;
}

void ArenaFromHost(const core::Arena& arena, std::span<const float> host) {
  MLPERF_CHECK_MSG(host.size() * sizeof(float) == arena.used(), "arena size mismatch");
  ops::CopyBytes(arena.base(), arena.device(), host.data(), core::Device::kCpu, arena.used());
  ops::Synchronize(arena.device());
}

}  // namespace

ResNet::ResNet(const ResNetConfig& config, int64_t batch_size)
    : config_(config),
      batch_(batch_size),
      bn_{.epsilon = config.bn_epsilon, .momentum = config.bn_momentum} {
  MLPERF_CHECK(batch_size > 0 && config.base_width > 0 && config.num_classes > 0);
  MLPERF_CHECK(config.layout == core::Layout::kNCHW || config.layout == core::Layout::kNHWC);
  MLPERF_CHECK_MSG(config.compute_dtype == core::DType::kF32,
                   "ResNet: only fp32 compute is implemented");
  const core::Device device = config.device;
  MLPERF_CHECK_MSG(device == core::Device::kCpu || ops::CudaAvailable(),
                   "ResNet: device kCuda needs a CUDA build and a device");
  core::Arena p = core::Arena::Measuring(device), g = core::Arena::Measuring(device);
  core::Arena b = core::Arena::Measuring(device), a = core::Arena::Measuring(device);
  Build({&p, &g, &b, &a});
  params_.emplace(device, p.used());
  grads_.emplace(device, g.used());
  buffers_.emplace(device, b.used());
  activations_.emplace(device, a.used());
  // Zero the alignment padding between tensors too, so that the flat spans
  // compare and checkpoint deterministically.
  for (core::Arena* arena : {&*params_, &*grads_, &*buffers_})
    ops::ZeroBytes(arena->base(), device, arena->capacity());
  ops::Synchronize(device);
  Build({&*params_, &*grads_, &*buffers_, &*activations_});
  if (device != core::Device::kCpu) {
    staging_bytes_ = input_.bytes() + labels_.bytes();
    staging_ = ops::AllocateHostPinned(staging_bytes_);
  }
  Initialize(0);
}

ResNet::~ResNet() { ops::FreeHostPinned(staging_); }

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
  std::vector<size_t> block_first_parameter;
  int index = 0;
  for (int s = 0; s < 4; ++s) {
    const int64_t width = base << s;
    for (int b = 0; b < config_.blocks[s]; ++b, ++index) {
      // conv2_x keeps the resolution; later stages halve it in their first block.
      const int64_t stride = (s > 0 && b == 0) ? 2 : 1;
      Bottleneck& block = blocks_[index];
      block_first_parameter.push_back(registry_.parameters.size());
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
  // Offsets for the gradient-ready hook (meaningful once the arenas are real).
  const auto grad_offset = [&](size_t parameter) {
    return static_cast<int64_t>(
               static_cast<const char*>(registry_.parameters[parameter].grad.data()) -
               static_cast<const char*>(arenas.grads->base())) /
           static_cast<int64_t>(sizeof(float));
  };
  block_grad_offset_.clear();
  for (size_t first : block_first_parameter) block_grad_offset_.push_back(grad_offset(first));
  fc_grad_offset_ = grad_offset(registry_.parameters.size() - 2);
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
  // Always drawn on the host (the initialisers are host code), then copied:
  // a device model starts bitwise equal to a CPU model with the same seed.
  std::vector<float> params(params_->used() / sizeof(float), 0.0f);
  std::vector<float> buffers(buffers_->used() / sizeof(float), 0.0f);
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const Parameter& p = registry_.parameters[i];
    const Tensor value = HostTwin(p.value, *params_, params);
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
  for (const NamedBuffer& b : registry_.buffers)
    core::FillConstant(HostTwin(b.value, *buffers_, buffers),
                       EndsWith(b.name, ".running_var") ? 1.0f : 0.0f);
  ParametersFromHost(params);
  BuffersFromHost(buffers);
  num_batches_tracked_ = 0;
}

void ResNet::Upload(const float* images, size_t image_count, const int32_t* labels,
                    size_t label_count) {
  if (images == nullptr) return;  // the batch already in input_ / labels_
  const size_t image_bytes = image_count * sizeof(float),
               label_bytes = label_count * sizeof(int32_t);
  if (device() == core::Device::kCpu) {
    std::memcpy(input_.data(), images, image_bytes);
    if (label_bytes > 0) std::memcpy(labels_.data(), labels, label_bytes);
    return;
  }
  // The staging buffer may still feed the previous step's upload.
  ops::Synchronize(device());
  char* staging = static_cast<char*>(staging_);
  std::memcpy(staging, images, image_bytes);
  if (label_bytes > 0) std::memcpy(staging + image_bytes, labels, label_bytes);
  ops::CopyBytes(input_.data(), device(), staging, core::Device::kCpu, image_bytes);
  if (label_bytes > 0)
    ops::CopyBytes(labels_.data(), device(), staging + image_bytes, core::Device::kCpu,
                   label_bytes);
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

float ResNet::ForwardTrain(const float* images, const int32_t* labels, float label_smoothing) {
  ForwardTrainAsync(images, labels, label_smoothing);
  float loss = 0.0f;
  ops::CopyBytes(&loss, core::Device::kCpu, loss_.data(), device(), sizeof(float));
  return loss;
}

void ResNet::ForwardTrainAsync(const float* images, const int32_t* labels, float label_smoothing) {
  Upload(images, static_cast<size_t>(input_.numel()), labels, static_cast<size_t>(batch_));
  Forward(/*training=*/true);
  ++num_batches_tracked_;
  // Mean over the local batch; averaging gradients over equal-sized ranks
  // then gives the reference's sum / global batch.
  ops::SoftmaxCrossEntropy(label_smoothing, static_cast<float>(batch_), logits_, labels_, loss_,
                           dlogits_);
}

void ResNet::Backward() {
  ops::LinearBackward(features_, fc_w_, dlogits_, dfeatures_, dfc_w_, dfc_b_);
  NotifyGradientsReady(fc_grad_offset_);
  Tensor dout = grad_scratch_[0], scratch = grad_scratch_[1], dx = grad_scratch_[2];
  ops::GlobalAvgPoolBackward(dfeatures_, ViewAs(dout, blocks_.back().output()));
  for (size_t i = blocks_.size(); i-- > 0;) {
    const Tensor& x = i > 0 ? blocks_[i - 1].output() : pooled_;
    blocks_[i].Backward(x, dout, scratch, dx, workspace_);
    NotifyGradientsReady(block_grad_offset_[i]);
    // The input gradient is the next block's output gradient.
    std::swap(dout, dx);
  }
  const Tensor dstem = ViewAs(scratch, stem_.output());
  ops::MaxPoolBackward(pool_, stem_.output(), ViewAs(dout, pooled_), dstem);
  stem_.Backward(input_, dstem, dx, Tensor(), workspace_);
  NotifyGradientsReady(0);
}

int64_t ResNet::EvaluateBatch(const float* images, const int32_t* labels, int count) {
  MLPERF_CHECK(count >= 0 && count <= batch_);
  const size_t used = static_cast<size_t>(count) * image_elements();
  Upload(images, used, nullptr, 0);
  // Samples are independent in inference mode; zeros keep the padding finite.
  ops::ZeroBytes(input_.f32() + used, device(), input_.bytes() - used * sizeof(float));
  Forward(/*training=*/false);
  int64_t correct = 0;
  const int64_t classes = config_.num_classes;
  const std::vector<float> logits = ToHost(logits_);
  for (int i = 0; i < count; ++i) {
    const float* z = logits.data() + i * classes;
    const int64_t guess = std::max_element(z, z + classes) - z;
    correct += labels[i] >= 0 && guess == labels[i];
  }
  return correct;
}

std::span<float> ResNet::parameters() { return FlatView(params_); }
std::span<float> ResNet::gradients() { return FlatView(grads_); }
std::span<float> ResNet::buffers() { return FlatView(buffers_); }
std::vector<float> ResNet::ParametersToHost() const { return ArenaToHost(*params_); }
std::vector<float> ResNet::GradientsToHost() const { return ArenaToHost(*grads_); }
std::vector<float> ResNet::BuffersToHost() const { return ArenaToHost(*buffers_); }
void ResNet::ParametersFromHost(std::span<const float> values) { ArenaFromHost(*params_, values); }
void ResNet::BuffersFromHost(std::span<const float> values) { ArenaFromHost(*buffers_, values); }

std::vector<float> ResNet::ToHost(const Tensor& t) const {
  MLPERF_CHECK(t.dtype() == core::DType::kF32);
  std::vector<float> host(static_cast<size_t>(t.numel()));
  ops::CopyBytes(host.data(), core::Device::kCpu, t.data(), t.device(), t.bytes());
  return host;
}

std::vector<io::NamedTensor> ResNet::HostViews(std::vector<float>& params,
                                               std::vector<float>& buffers) const {
  std::vector<io::NamedTensor> named;
  for (const Parameter& p : registry_.parameters)
    named.push_back({p.name, HostTwin(p.value, *params_, params)});
  for (const NamedBuffer& b : registry_.buffers)
    named.push_back({b.name, HostTwin(b.value, *buffers_, buffers)});
  return named;
}

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
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  std::vector<io::NamedTensor> named = HostViews(params, buffers);
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
  // Loaded into host copies first: a failed load leaves the model as it was.
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  for (const io::NamedTensor& t : HostViews(params, buffers))
    if (absl::Status s = copy(t.name, t.tensor); !s.ok()) return s;
  // Optional: files from older torch versions or other tools may lack it.
  const std::string counter = registry_.batch_norms.front() + ".num_batches_tracked";
  if (file->tensors().count(counter) != 0) {
    int64_t count = 0;
    if (absl::Status s = copy(counter, Tensor(&count, core::Shape(), core::DType::kI64)); !s.ok())
      return s;
    num_batches_tracked_ = count;
  }
  ParametersFromHost(params);
  BuffersFromHost(buffers);
  return absl::OkStatus();
}

}  // namespace mlperf::models
