#include "reference/models/unet3d.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <string>

#include "base/check.h"
#include "fmt/format.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/loss_shapes.h"
#include "reference/kernels/precision.h"

namespace mlperf::models {

using core::Tensor;

UNet3D::UNet3D(const UNet3DConfig& config, int64_t batch_size, uint64_t seed)
    : Model(config.device, batch_size),
      config_(config),
      stored_(ops::ActivationStorageType(config.device, config.layout == core::Layout::kNDHWC)) {
  MLPERF_CHECK_MSG(config.layout == core::Layout::kNCDHW || config.layout == core::Layout::kNDHWC,
                   "UNet3D: the layout must be NCDHW or NDHWC");
  AllocateArenas([this](const layers::ModelArenas& arenas) { Build(arenas); });
  for (Level& l : levels_) l.grad_offset = GradientOffset(l.first_parameter);
  for (Up& u : ups_) u.grad_offset = GradientOffset(u.first_parameter);
  output_grad_offset_ = GradientOffset(output_parameter_);
  if (device() != core::Device::kCpu)
    staging_ = std::make_unique<UploadStaging>(input_.bytes() + labels_.bytes());
  Initialize(seed);
}

UNet3D::UNet3D(const UNet3DConfig& config, int64_t batch_size, MeasureOnly)
    : Model(core::Device::kCpu, batch_size),
      config_(config),
      stored_(ops::ActivationStorageType(config.device, config.layout == core::Layout::kNDHWC)) {
  config_.device = core::Device::kCpu;
  measured_bytes_ = static_cast<int64_t>(
      MeasureArenas(core::Device::kCpu, [this](const layers::ModelArenas& a) { Build(a); }));
}

UNet3D::~UNet3D() = default;

int64_t UNet3D::ArenaBytes(const UNet3DConfig& config, int64_t batch_size) {
  return UNet3D(config, batch_size, MeasureOnly{}).measured_bytes_;
}

void UNet3D::Build(const layers::ModelArenas& arenas) {
  const std::vector<int64_t>& f = config_.filters;
  const size_t depth = f.size();
  MLPERF_CHECK(depth >= 1 && config_.in_channels >= 1 && config_.num_classes >= 2);
  MLPERF_CHECK_MSG(config_.roi > 0 && config_.roi % (int64_t{1} << depth) == 0,
                   "UNet3D: the ROI must be a multiple of 2^(number of filters)");
  const core::Layout layout = config_.layout;
  const int64_t n = batch_size(), roi = config_.roi;
  core::Arena& acts = *arenas.activations;
  input_ = acts.Allocate(layers::VolumeShape(layout, n, config_.in_channels, roi, roi, roi),
                         core::DType::kF32, layout);

  levels_.assign(depth + 1, Level{});
  ups_.assign(depth, Up{});
  int64_t largest = input_.numel(), workspace = 1;
  auto note = [&](const layers::ConvInstanceNormRelu& u) {
    largest = std::max(largest, u.output().numel());
    workspace = std::max(workspace, u.workspace_elements());
  };
  // Input block, downsampling blocks, bottleneck.
  int64_t size = roi, channels = config_.in_channels;
  for (size_t i = 0; i <= depth; ++i) {
    Level& l = levels_[i];
    const int64_t width = f[std::min(i, depth - 1)];
    const int64_t stride = i == 0 ? 1 : 2;
    const std::string name = i == 0       ? "input_block"
                             : i == depth ? "bottleneck"
                                          : fmt::format("downsample.{}", i - 1);
    l.first_parameter = registry_.parameters.size();
    l.conv1.Allocate(Conv3d(n, channels, size, size, size, width, 3, stride, 1), layout,
                     config_.norm_epsilon, name + ".conv1", arenas, &registry_, stored_);
    size /= stride;
    l.conv2.Allocate(Conv3d(n, width, size, size, size, width, 3, 1, 1), layout,
                     config_.norm_epsilon, name + ".conv2", arenas, &registry_, stored_);
    note(l.conv1);
    note(l.conv2);
    channels = width;
  }
  // Upsampling blocks, each back to the resolution of skip depth-1-j.
  for (size_t j = 0; j < depth; ++j) {
    Up& u = ups_[j];
    const int64_t out = f[depth - 1 - j];
    u.first_parameter = registry_.parameters.size();
    const std::string name = fmt::format("upsample.{}", j);
    // The adjoint convolution: 2^3 stride 2 from the skip's size down to ours.
    u.upsample.Allocate(Conv3d(n, out, 2 * size, 2 * size, 2 * size, channels, 2, 2, 0),
                        /*transposed=*/true, layout, name + ".upsample_conv", arenas, &registry_,
                        stored_);
    size *= 2;
    u.cat =
        acts.Allocate(layers::VolumeShape(layout, n, 2 * out, size, size, size), stored_, layout);
    u.conv1.Allocate(Conv3d(n, 2 * out, size, size, size, out, 3, 1, 1), layout,
                     config_.norm_epsilon, name + ".conv1", arenas, &registry_, stored_);
    u.conv2.Allocate(Conv3d(n, out, size, size, size, out, 3, 1, 1), layout, config_.norm_epsilon,
                     name + ".conv2", arenas, &registry_, stored_);
    largest = std::max(largest, u.cat.numel());
    workspace = std::max(workspace, u.upsample.workspace_elements());
    note(u.conv1);
    note(u.conv2);
    channels = out;
  }
  MLPERF_CHECK(size == roi);
  output_parameter_ = registry_.parameters.size();
  output_.Allocate(Conv3d(n, channels, size, size, size, config_.num_classes, 1, 1, 0),
                   /*transposed=*/false, layout, "output.conv", arenas, &registry_);
  workspace = std::max(workspace, output_.workspace_elements());
  logits_ = output_.output();
  dlogits_ = acts.Allocate(logits_.shape(), core::DType::kF32, layout);
  labels_ = acts.Allocate({n, roi, roi, roi}, core::DType::kI32);
  loss_ = acts.Allocate({1});
  loss_workspace_ =
      acts.Allocate({DiceCrossEntropyWorkspaceElements(n, config_.num_classes, roi * roi * roi)});
  dskip_.clear();
  for (size_t i = 0; i < depth; ++i) {
    const Tensor& skip = levels_[i].conv2.output();
    dskip_.push_back(acts.Allocate(skip.shape(), stored_, layout));
  }
  for (Tensor& t : grad_scratch_) t = acts.Allocate({largest}, stored_);
  workspace_ = acts.Allocate({workspace});
}

void UNet3D::Initialize(uint64_t seed) {
  std::vector<float> params(parameters().size(), 0.0f);
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    const Tensor value = HostParameter(p.value, params);
    const core::RngStream rng{.seed = seed, .offset = static_cast<uint64_t>(i)};
    if (p.batch_norm) {
      core::FillConstant(value, p.name.ends_with(".weight") ? 1.0f : 0.0f);
    } else {
      core::TorchDefaultUniform(value, p.fan_in, rng);
    }
  }
  ParametersFromHost(params);
  num_batches_tracked_ = 0;
}

void UNet3D::Upload(const Batch& batch, bool with_labels) {
  if (batch.inputs.empty()) return;  // the batch already on the device
  MLPERF_CHECK(batch.count <= batch_size());
  const Tensor& images = batch.inputs[0];
  const int64_t per_image = input_.numel() / batch_size();
  MLPERF_CHECK(images.numel() == batch.count * per_image);
  UploadStaging::Part parts[2] = {{input_.data(), images.data(), images.bytes()}};
  size_t count = 1;
  if (with_labels) {
    MLPERF_CHECK(batch.inputs.size() == 2);
    const Tensor& labels = batch.inputs[1];
    MLPERF_CHECK(labels.numel() == batch.count * voxels() && labels.dtype() == core::DType::kI32);
    parts[count++] = {labels_.data(), labels.data(), labels.bytes()};
  }
  if (staging_ != nullptr) {
    staging_->Upload(device(), std::span(parts, count));
  } else {
    for (size_t i = 0; i < count; ++i)
      ops::CopyBytes(parts[i].device_dst, device(), parts[i].host_src, core::Device::kCpu,
                     parts[i].bytes);
  }
  // The unused samples of a last, partial batch of windows: zeros keep them finite.
  ops::ZeroBytes(input_.f32() + batch.count * per_image, device(), input_.bytes() - images.bytes());
}

void UNet3D::Forward() {
  const Tensor* x = &input_;
  for (Level& l : levels_) {
    l.conv1.Forward(*x, workspace_);
    l.conv2.Forward(l.conv1.output(), workspace_);
    x = &l.conv2.output();
  }
  const size_t depth = ups_.size();
  for (size_t j = 0; j < depth; ++j) {
    Up& u = ups_[j];
    u.upsample.Forward(*x, workspace_);
    ops::ConcatChannels(u.upsample.output(), levels_[depth - 1 - j].conv2.output(), u.cat);
    u.conv1.Forward(u.cat, workspace_);
    u.conv2.Forward(u.conv1.output(), workspace_);
    x = &u.conv2.output();
  }
  output_.Forward(*x, workspace_);
}

void UNet3D::UploadTrainingBatch(const Batch& batch) {
  if (!batch.inputs.empty()) MLPERF_CHECK(batch.count == batch_size());
  Upload(batch, /*with_labels=*/true);
}

void UNet3D::ForwardTrainAsync(const Batch& batch) {
  UploadTrainingBatch(batch);
  Forward();
  ++num_batches_tracked_;
  ops::DiceCrossEntropy(logits_, labels_, loss_, dlogits_, loss_workspace_);
}

void UNet3D::Backward() {
  ScaleLossGradient(dlogits_);
  const size_t depth = ups_.size();
  Tensor a = grad_scratch_[0], b = grad_scratch_[1], c = grad_scratch_[2];
  // a: the gradient of the current block's output, from here on.
  output_.Backward(ups_.back().conv2.output(), dlogits_, a, workspace_);
  NotifyGradientsReady(output_grad_offset_);
  for (size_t j = depth; j-- > 0;) {
    Up& u = ups_[j];
    u.conv2.Backward(u.conv1.output(), a, b, c, workspace_);
    u.conv1.Backward(u.cat, c, b, a, workspace_);  // a: gradient of the concatenation
    const Tensor dup = layers::ViewAs(c, u.upsample.output());
    ops::SplitChannels(layers::ViewAs(a, u.cat), dup, dskip_[depth - 1 - j]);
    const Tensor& below = j > 0 ? ups_[j - 1].conv2.output() : levels_[depth].conv2.output();
    u.upsample.Backward(below, dup, a, workspace_);
    NotifyGradientsReady(u.grad_offset);
  }
  // Down the levels: a holds the gradient of the bottleneck's output; each
  // level's output gradient is then its skip gradient plus what the level
  // above hands back.
  for (size_t i = depth + 1; i-- > 0;) {
    Level& l = levels_[i];
    const Tensor dy = i == depth ? a : dskip_[i];
    const Tensor& x = i > 0 ? levels_[i - 1].conv2.output() : input_;
    l.conv2.Backward(l.conv1.output(), dy, b, c, workspace_);
    const Tensor dx = i > 0 ? layers::ViewAs(a, x) : Tensor();
    l.conv1.Backward(x, c, b, dx, workspace_);
    if (i > 0) {
      ops::AccumulateStored(dx, dskip_[i - 1]);  // the instance norm's backward reads the sum
    }
    NotifyGradientsReady(l.grad_offset);
  }
}

void UNet3D::ForwardInference(const Batch& batch) {
  Upload(batch, /*with_labels=*/false);
  Forward();
}

std::vector<double> UNet3D::EvaluateCase(const Tensor& image, const Tensor& labels,
                                         const SlidingWindowOptions& options) {
  MLPERF_CHECK_MSG(config_.in_channels == 1, "UNet3D: evaluation takes one input channel");
  const core::Shape& s = image.shape();
  MLPERF_CHECK(s.rank() == 5 && s[0] == 1 && s[1] == 1 && image.dtype() == core::DType::kF32);
  MLPERF_CHECK(options.roi == config_.roi);
  const int64_t window = voxels(), classes = config_.num_classes;
  std::vector<float> channels_last;
  const VolumeLogits logits = SlidingWindowLogits(
      options, image.f32(), {s[2], s[3], s[4]}, classes, batch_size(),
      [&](const float* windows, int64_t count, float* out) {
        const int64_t r = config_.roi;
        const Batch b{
            .inputs = {Tensor(const_cast<float*>(windows), {count, 1, r, r, r}, core::DType::kF32)},
            .count = count};
        Upload(b, /*with_labels=*/false);
        Forward();
        const int64_t floats = count * classes * window;
        if (config_.layout == core::Layout::kNCDHW) {
          ops::CopyBytes(out, core::Device::kCpu, logits_.data(), device(), sizeof(float) * floats);
          return;
        }
        // [count, window, classes] to the [count, classes, window] windows are read as.
        channels_last.resize(floats);
        ops::CopyBytes(channels_last.data(), core::Device::kCpu, logits_.data(), device(),
                       sizeof(float) * floats);
        for (int64_t i = 0; i < count; ++i)
          for (int64_t q = 0; q < window; ++q)
            for (int64_t j = 0; j < classes; ++j)
              out[(i * classes + j) * window + q] = channels_last[(i * window + q) * classes + j];
      });
  return CaseDice(logits, labels);
}

MetricSums UNet3D::EvaluateBatch(const Batch& batch) {
  MLPERF_CHECK(batch.inputs.size() == 2);
  const Tensor& images = batch.inputs[0];
  const Tensor& labels = batch.inputs[1];
  // The labels give the volume's extent: one input channel is alike in
  // memory as [n, 1, d, h, w] (the loader's) and [n, d, h, w, 1] (a
  // channels-last model's synthetic batch).
  const core::Shape& s = labels.shape();
  MLPERF_CHECK(s.rank() == 4 && images.shape().rank() == 5 && images.numel() == labels.numel());
  const int64_t case_voxels = s[1] * s[2] * s[3];
  MetricSums sums;
  for (int64_t i = 0; i < batch.count; ++i) {
    const Tensor image(images.f32() + i * case_voxels, {1, 1, s[1], s[2], s[3]}, core::DType::kF32);
    const Tensor label(
        static_cast<std::byte*>(labels.data()) + i * case_voxels * core::DTypeSize(labels.dtype()),
        {1, s[1], s[2], s[3]}, labels.dtype());
    const std::vector<double> dice = EvaluateCase(image, label, {.roi = config_.roi});
    double sum = 0;
    for (double d : dice) sum += d;
    sums.numerator += sum / static_cast<double>(dice.size());
    sums.denominator += 1;
  }
  return sums;
}

OwnedBatch UNet3D::SyntheticBatch() const {
  OwnedBatch owned;
  const int64_t n = batch_size(), r = config_.roi, v = voxels();
  const Tensor images = owned.Add(
      layers::VolumeShape(config_.layout, n, config_.in_channels, r, r, r), core::DType::kF32);
  const Tensor labels = owned.Add({n, r, r, r}, core::DType::kI32);
  float* x = images.f32();
  int32_t* y = labels.as<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t q = 0; q < v; ++q) {
      const int64_t d = q / (r * r), h = q / r % r, w = q % r;
      auto inside = [&](int64_t lo, int64_t hi) {
        return d >= lo && d < hi && h >= lo && h < hi && w >= lo && w < hi;
      };
      const int32_t label = inside(3 * r / 8, 5 * r / 8) ? 2 : inside(r / 4, 3 * r / 4) ? 1 : 0;
      y[i * v + q] = label;
      const float noise =
          core::PhiloxUniform(/*seed=*/0x5eed, static_cast<uint64_t>(i), static_cast<uint64_t>(q));
      const int64_t channels = config_.in_channels;
      for (int64_t c = 0; c < channels; ++c) {
        const int64_t at = config_.layout == core::Layout::kNDHWC ? (i * v + q) * channels + c
                                                                  : (i * channels + c) * v + q;
        x[at] = static_cast<float>(label) + noise - 0.5f;
      }
    }
  }
  owned.batch.count = n;
  return owned;
}

}  // namespace mlperf::models
