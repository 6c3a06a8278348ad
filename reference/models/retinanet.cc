#include "reference/models/retinanet.h"

#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "base/check.h"
#include "fmt/format.h"
#include "reference/core/arena.h"
#include "reference/core/init.h"
#include "reference/io/torch_checkpoint.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/detection.h"

namespace mlperf::models {

using core::Tensor;

namespace {

// A tensor's floats on the host: itself on the CPU, else a copy.
const float* HostFloats(const Tensor& t, std::vector<float>& copy) {
  if (t.device() == core::Device::kCpu) return t.f32();
  copy.resize(static_cast<size_t>(t.numel()));
  ops::CopyBytes(copy.data(), core::Device::kCpu, t.data(), t.device(), t.bytes());
  return copy.data();
}

// NMS with its suppression matrix built on `device` (ops::NmsMask), walked
// on the host: the CPU's indices (the kernels are twins).
std::vector<int64_t> DeviceNms(core::Device device, std::span<const detection::Box> boxes,
                               std::span<const float> scores, double iou_threshold) {
  const std::vector<int64_t> order = detection::ScoreOrder(scores);
  const auto n = static_cast<int64_t>(order.size()), words = (n + 63) / 64;
  if (n == 0) return {};
  std::vector<float> sorted(static_cast<size_t>(4 * n));
  for (int64_t r = 0; r < n; ++r) {
    const detection::Box& b = boxes[order[r]];
    sorted[4 * r] = b.x1;
    sorted[4 * r + 1] = b.y1;
    sorted[4 * r + 2] = b.x2;
    sorted[4 * r + 3] = b.y2;
  }
  core::Arena arena(device, static_cast<size_t>(4 * n + 2 * n * words) * 4 + 1024);
  const Tensor on_device = arena.Allocate({n, 4});
  const Tensor mask = arena.Allocate({n, words}, core::DType::kI64);
  ops::CopyBytes(on_device.data(), device, sorted.data(), core::Device::kCpu, on_device.bytes());
  ops::NmsMask(on_device, iou_threshold, mask);
  std::vector<uint64_t> host(static_cast<size_t>(n * words));
  ops::CopyBytes(host.data(), core::Device::kCpu, mask.data(), device, mask.bytes());
  return detection::WalkSuppression(order, host);
}

}  // namespace

RetinaNet::RetinaNet(const RetinaNetConfig& config, int64_t batch_size, uint64_t seed)
    : Model(config.device, batch_size), config_(config) {
  MLPERF_CHECK(config.num_classes > 0 && config.head_convs >= 1 && config.max_boxes >= 0);
  AllocateArenas([this](const layers::ModelArenas& arenas) { Build(arenas); });
  std::vector<detection::FeatureSize> sizes;
  for (int l = 0; l < ResNeXtFpn::kLevels; ++l)
    sizes.push_back({backbone_.feature(l).dim(2), backbone_.feature(l).dim(3)});
  anchors_ = detection::ImageAnchors(detection::RetinaNetAnchorSizes(), config.backbone.image_size,
                                     config.backbone.image_size, sizes);
  Initialize(seed);
}

RetinaNet::RetinaNet(const RetinaNetConfig& config, int64_t batch_size, MeasureOnly)
    : Model(core::Device::kCpu, batch_size), config_(config) {
  config_.device = core::Device::kCpu;
  measured_bytes_ = static_cast<int64_t>(
      MeasureArenas(core::Device::kCpu, [this](const layers::ModelArenas& a) { Build(a); }));
}

int64_t RetinaNet::ArenaBytes(const RetinaNetConfig& config, int64_t batch_size) {
  return RetinaNet(config, batch_size, MeasureOnly{}).measured_bytes_;
}

RetinaNet::~RetinaNet() = default;

void RetinaNet::Build(const layers::ModelArenas& arenas) {
  const int64_t n = batch_size(), size = config_.backbone.image_size;
  core::Arena& acts = *arenas.activations;
  images_ = acts.Allocate({n, 3, size, size}, core::DType::kF32, core::Layout::kNCHW);
  backbone_.Allocate(config_.backbone, n, arenas, &registry_);
  const int64_t f = config_.backbone.fpn_channels;
  const int64_t a = detection::kAnchorsPerCell;
  cls_convs_.assign(static_cast<size_t>(config_.head_convs), layers::ConvBias());
  reg_convs_.assign(static_cast<size_t>(config_.head_convs), layers::ConvBias());
  auto head = [&](std::vector<layers::ConvBias>& convs, layers::ConvBias& final,
                  const std::string& name, const std::string& final_name, int64_t outputs) {
    for (size_t i = 0; i < convs.size(); ++i)
      convs[i].Allocate(f, f, 3, true, fmt::format("{}.conv.{}", name, 2 * i), arenas, &registry_);
    final.Allocate(f, outputs, 3, false, name + "." + final_name, arenas, &registry_);
    for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
      const Tensor& p = backbone_.feature(l);
      ConvGeometry g = Conv2d(n, f, p.dim(2), p.dim(3), f, 3, 3, 1, 1);
      // Winograd on the CPU: the heads are most of the step, and the parity
      // with torchvision holds at its tolerances (retinanet_parity_test).
      g.winograd = true;
      for (layers::ConvBias& c : convs) c.AddSite(g, arenas);
      ConvGeometry last = g;
      last.out_channels = outputs;
      final.AddSite(last, arenas);
    }
  };
  head(cls_convs_, cls_final_, "head.classification_head", "cls_logits", a * config_.num_classes);
  head(reg_convs_, reg_final_, "head.regression_head", "bbox_reg", a * 4);
  for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
    dlogits_[l] =
        acts.Allocate(cls_final_.output(l).shape(), core::DType::kF32, core::Layout::kNCHW);
    dregression_[l] =
        acts.Allocate(reg_final_.output(l).shape(), core::DType::kF32, core::Layout::kNCHW);
    dfeatures_[l] =
        acts.Allocate(backbone_.feature(l).shape(), core::DType::kF32, core::Layout::kNCHW);
  }
  for (Tensor& s : head_scratch_) s = acts.Allocate(cls_convs_[0].output(0).shape());
  dpart_ = acts.Allocate(backbone_.feature(0).shape());
  int64_t ws = backbone_.workspace_elements();
  for (const auto* convs : {&cls_convs_, &reg_convs_})
    for (const layers::ConvBias& c : *convs) ws = std::max(ws, c.workspace_elements());
  ws = std::max({ws, cls_final_.workspace_elements(), reg_final_.workspace_elements()});
  workspace_ = acts.Allocate({std::max<int64_t>(ws, 1)});
  loss_ = acts.Allocate({1});
}

void RetinaNet::Initialize(uint64_t seed) {
  std::vector<float> params(parameters().size(), 0.0f), buffers(this->buffers().size(), 0.0f);
  const float prior_bias = -std::log((1.0f - 0.01f) / 0.01f);
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    const core::RngStream rng{.seed = seed, .offset = static_cast<uint64_t>(i)};
    // A frozen parameter is drawn into its own host copy, then set.
    std::vector<float> frozen(p.trainable ? 0 : static_cast<size_t>(p.value.numel()));
    const Tensor value = p.trainable ? HostParameter(p.value, params)
                                     : Tensor(frozen.data(), p.value.shape(), core::DType::kF32);
    const core::Shape& s = p.value.shape();
    if (p.name.ends_with(".bias")) {
      core::FillConstant(value, p.name.ends_with("cls_logits.bias") ? prior_bias : 0.0f);
    } else if (p.name.starts_with("backbone.body.")) {
      core::HeNormal(value, s[0] * s[2] * s[3], rng);  // kaiming_normal_, mode fan_out
    } else if (p.name.starts_with("backbone.fpn.")) {
      const float bound =
          std::sqrt(3.0f / static_cast<float>(p.fan_in));  // kaiming_uniform_, a = 1
      core::FillUniform(value, -bound, bound, rng);
    } else {
      core::FillNormal(value, 0.0f, 0.01f, rng);
    }
    if (!p.trainable) SetParameter(p, frozen);
  }
  for (const layers::NamedBuffer& b : registry_.buffers)
    core::FillConstant(
        HostBuffer(b.value, buffers),
        b.name.ends_with(".weight") || b.name.ends_with(".running_var") ? 1.0f : 0.0f);
  ParametersFromHost(params);
  BuffersFromHost(buffers);
}

void RetinaNet::Forward(const Batch& batch) {
  // No inputs: the last batch's images, still in images_ (run_benchmark).
  if (!batch.inputs.empty()) {
    MLPERF_CHECK(batch.inputs[0].numel() == images_.numel());
    ops::CopyBytes(images_.data(), device(), batch.inputs[0].data(), core::Device::kCpu,
                   images_.bytes());
  }
  backbone_.Forward(images_, workspace_);
  for (int l = 0; l < ResNeXtFpn::kLevels; ++l)
    for (auto [convs, final] :
         {std::pair{&cls_convs_, &cls_final_}, std::pair{&reg_convs_, &reg_final_}}) {
      const Tensor* x = &backbone_.feature(l);
      for (layers::ConvBias& c : *convs) {
        c.Forward(l, *x, workspace_);
        x = &c.output(l);
      }
      final->Forward(l, *x, workspace_);
    }
}

void RetinaNet::ForwardTrainAsync(const Batch& batch) {
  const int64_t n = batch_size(), m = config_.max_boxes;
  if (!batch.inputs.empty()) {  // else the last batch again
    MLPERF_CHECK_MSG(batch.inputs.size() >= 3, "RetinaNet trains on images, boxes and labels");
    const Tensor &boxes = batch.inputs[1], &labels = batch.inputs[2];
    MLPERF_CHECK(boxes.numel() == n * m * 4 && labels.numel() == n * m);
    targets_.assign(static_cast<size_t>(n), {});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m && labels.as<int32_t>()[i * m + j] >= 0; ++j) {
        const float* b = boxes.f32() + (i * m + j) * 4;
        targets_[i].boxes.push_back({b[0], b[1], b[2], b[3]});
        targets_[i].labels.push_back(labels.as<int32_t>()[i * m + j]);
      }
  }
  MLPERF_CHECK_MSG(static_cast<int64_t>(targets_.size()) == n, "no batch uploaded yet");
  Forward(batch);

  // The loss on the host, image by image, over each level's slice.
  const bool host = device() == core::Device::kCpu;
  std::vector<std::vector<float>> copies(4 * ResNeXtFpn::kLevels);
  std::vector<const float*> logits(ResNeXtFpn::kLevels), regression(ResNeXtFpn::kLevels);
  std::vector<float*> dlogits(ResNeXtFpn::kLevels), dregression(ResNeXtFpn::kLevels);
  for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
    logits[l] = HostFloats(cls_final_.output(l), copies[4 * l]);
    regression[l] = HostFloats(reg_final_.output(l), copies[4 * l + 1]);
    copies[4 * l + 2].resize(host ? 0 : static_cast<size_t>(dlogits_[l].numel()));
    copies[4 * l + 3].resize(host ? 0 : static_cast<size_t>(dregression_[l].numel()));
    dlogits[l] = host ? dlogits_[l].f32() : copies[4 * l + 2].data();
    dregression[l] = host ? dregression_[l].f32() : copies[4 * l + 3].data();
  }
  const int64_t classes = config_.num_classes, a = detection::kAnchorsPerCell;
  // Images in parallel (each writes its own gradient slices), summed in order.
  std::vector<detection::ImageLoss> losses(static_cast<size_t>(n));
#pragma omp parallel for schedule(dynamic)
  for (int64_t i = 0; i < n; ++i) {
    std::vector<detection::LevelHead> levels;
    for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
      const int64_t h = cls_final_.output(l).dim(2), w = cls_final_.output(l).dim(3);
      const int64_t cls_image = a * classes * h * w, reg_image = a * 4 * h * w;
      levels.push_back({logits[l] + i * cls_image, regression[l] + i * reg_image,
                        dlogits[l] + i * cls_image, dregression[l] + i * reg_image, h, w});
    }
    losses[i] = detection::RetinaNetImageLoss(levels, anchors_, classes, targets_[i],
                                              1.0f / static_cast<float>(n));
  }
  double cls = 0, reg = 0;
  for (const detection::ImageLoss& loss : losses) {
    cls += loss.classification;
    reg += loss.regression;
  }
  classification_loss_ = cls / static_cast<double>(n);
  regression_loss_ = reg / static_cast<double>(n);
  if (!host)
    for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
      ops::CopyBytes(dlogits_[l].data(), device(), dlogits[l], core::Device::kCpu,
                     dlogits_[l].bytes());
      ops::CopyBytes(dregression_[l].data(), device(), dregression[l], core::Device::kCpu,
                     dregression_[l].bytes());
    }
  const float total = static_cast<float>(classification_loss_ + regression_loss_);
  ops::CopyBytes(loss_.data(), device(), &total, core::Device::kCpu, sizeof(float));
  ++num_batches_tracked_;
}

void RetinaNet::HeadsBackward(std::vector<layers::ConvBias>& convs, layers::ConvBias& final,
                              const std::array<Tensor, ResNeXtFpn::kLevels>& dout,
                              bool first_branch) {
  for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
    const bool accumulate = l > 0;
    Tensor dy = head_scratch_[0], dx = head_scratch_[1];
    final.Backward(l, convs.back().output(l), dout[l], dx, workspace_, accumulate);
    for (size_t i = convs.size(); i-- > 0;) {
      std::swap(dy, dx);
      const Tensor& x = i == 0 ? backbone_.feature(l) : convs[i - 1].output(l);
      // The first conv's input gradient goes to the level's feature gradient.
      const Tensor into = i > 0 ? dx : first_branch ? dfeatures_[l] : dpart_;
      convs[i].Backward(l, x, dy, into, workspace_, accumulate);
    }
    if (!first_branch) {
      const Tensor part = layers::ViewAs(dpart_, dfeatures_[l]);
      ops::Add(dfeatures_[l], part, dfeatures_[l]);
    }
  }
}

void RetinaNet::Backward() {
  HeadsBackward(cls_convs_, cls_final_, dlogits_, true);
  HeadsBackward(reg_convs_, reg_final_, dregression_, false);
  backbone_.Backward(dfeatures_, workspace_);
  NotifyGradientsReady(0);
}

MetricSums RetinaNet::EvaluateBatch(const Batch& batch) {
  int64_t detections = 0;
  for (const detection::Detections& d : Detect(batch))
    detections += static_cast<int64_t>(d.scores.size());
  return {static_cast<double>(detections), static_cast<double>(batch.count)};
}

std::vector<detection::Detections> RetinaNet::Detect(const Batch& batch) {
  Forward(batch);
  // A batch without inputs is the last one again: all of it.
  const int64_t count = batch.inputs.empty() ? batch_size() : batch.count;
  const int64_t classes = config_.num_classes, a = detection::kAnchorsPerCell;
  // The heads' outputs on the host once (copies on a device), then per image.
  std::vector<std::vector<float>> copies(2 * ResNeXtFpn::kLevels);
  std::vector<const float*> cls_host(ResNeXtFpn::kLevels), reg_host(ResNeXtFpn::kLevels);
  for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
    cls_host[l] = HostFloats(cls_final_.output(l), copies[2 * l]);
    reg_host[l] = HostFloats(reg_final_.output(l), copies[2 * l + 1]);
  }
  std::vector<detection::Detections> out;
  std::vector<std::vector<float>> logits(ResNeXtFpn::kLevels), regression(ResNeXtFpn::kLevels);
  for (int64_t i = 0; i < count; ++i) {
    std::vector<detection::LevelOutputs> levels;
    int64_t first = 0;
    for (int l = 0; l < ResNeXtFpn::kLevels; ++l) {
      const Tensor& c = cls_final_.output(l);
      const int64_t plane = c.dim(2) * c.dim(3);
      const float* cls = cls_host[l] + i * a * classes * plane;
      const float* reg = reg_host[l] + i * a * 4 * plane;
      // From [A * K, H, W] to the reference's [H * W * A, K].
      logits[l].resize(static_cast<size_t>(plane * a * classes));
      regression[l].resize(static_cast<size_t>(plane * a * 4));
      for (int64_t ch = 0; ch < a * classes; ++ch)
        for (int64_t p = 0; p < plane; ++p)
          logits[l][(p * a + ch / classes) * classes + ch % classes] = cls[ch * plane + p];
      for (int64_t ch = 0; ch < a * 4; ++ch)
        for (int64_t p = 0; p < plane; ++p)
          regression[l][(p * a + ch / 4) * 4 + ch % 4] = reg[ch * plane + p];
      levels.push_back({logits[l].data(), regression[l].data(),
                        std::span<const detection::Box>(anchors_).subspan(first, plane * a)});
      first += plane * a;
    }
    // On a GPU the NMS's suppression matrix is built there (the reference
    // runs torchvision's CUDA NMS); on the CPU the plain loop.
    const detection::NmsFn nms =
        device() == core::Device::kCpu
            ? detection::NmsFn(detection::Nms)
            : [this](std::span<const detection::Box> b, std::span<const float> s, double t) {
                return DeviceNms(device(), b, s, t);
              };
    out.push_back(detection::Postprocess(levels, classes, config_.backbone.image_size,
                                         config_.backbone.image_size, config_.postprocess, nms));
  }
  return out;
}

OwnedBatch RetinaNet::SyntheticBatch() const {
  OwnedBatch b;
  const int64_t n = batch_size(), size = config_.backbone.image_size, m = config_.max_boxes;
  const Tensor images = b.Add({n, 3, size, size}, core::DType::kF32);
  const Tensor boxes = b.Add({n, m, 4}, core::DType::kF32);
  const Tensor labels = b.Add({n, m}, core::DType::kI32);
  for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = 0.5f;
  for (int64_t i = 0; i < n * m; ++i) labels.as<int32_t>()[i] = -1;
  for (int64_t i = 0; i < n && m > 0; ++i) {
    const float q = static_cast<float>(size) / 4;
    float* box = boxes.f32() + i * m * 4;
    box[0] = q, box[1] = q, box[2] = 3 * q, box[3] = 3 * q;
    labels.as<int32_t>()[i * m] = static_cast<int32_t>(i % config_.num_classes);
  }
  b.batch.count = n;
  return b;
}

namespace {
constexpr std::string_view kBody = "backbone.body.";
}  // namespace

absl::Status RetinaNet::LoadBackbone(const std::string& path) {
  // PyTorch's own file (the reference's download), or safetensors.
  std::optional<io::TorchCheckpoint> torch;
  std::optional<io::SafetensorsFile> safetensors;
  if (io::LooksLikeTorchCheckpoint(path)) {
    absl::StatusOr<io::TorchCheckpoint> file = io::TorchCheckpoint::Read(path);
    if (!file.ok()) return file.status();
    torch = std::move(*file);
  } else {
    absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(path);
    if (!file.ok()) return file.status();
    safetensors = std::move(*file);
  }
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  std::vector<std::pair<const layers::Parameter*, std::vector<float>>> frozen;
  auto read = [&](const std::string& name, const Tensor& t, float* dst) -> absl::Status {
    const std::string stored = name.substr(kBody.size());
    if ((torch ? torch->tensors().count(stored) : safetensors->tensors().count(stored)) == 0)
      return absl::NotFoundError(fmt::format("{}: no {} (the backbone's {})", path, stored, name));
    return torch ? torch->CopyToFloats(stored, t.shape(), dst)
                 : safetensors->CopyToFloats(stored, t.shape(), dst);
  };
  for (const layers::Parameter& p : registry_.parameters) {
    if (!p.name.starts_with(kBody)) continue;
    if (p.trainable) {
      const Tensor host = HostParameter(p.value, params);
      if (absl::Status s = read(p.name, p.value, host.f32()); !s.ok()) return s;
    } else {
      frozen.emplace_back(&p, std::vector<float>(static_cast<size_t>(p.value.numel())));
      if (absl::Status s = read(p.name, p.value, frozen.back().second.data()); !s.ok()) return s;
    }
  }
  for (const layers::NamedBuffer& b : registry_.buffers) {
    if (!b.name.starts_with(kBody)) continue;
    if (absl::Status s = read(b.name, b.value, HostBuffer(b.value, buffers).f32()); !s.ok())
      return s;
  }
  ParametersFromHost(params);
  BuffersFromHost(buffers);
  for (const auto& [p, values] : frozen) SetParameter(*p, values);
  return absl::OkStatus();
}

absl::Status RetinaNet::SaveBackbone(const std::string& path) const {
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  std::vector<std::byte> frozen = FrozenToHost();
  std::vector<io::NamedTensor> body;
  for (io::NamedTensor& t : NamedHostTensors(params, buffers, &frozen))
    if (t.name.starts_with(kBody)) body.push_back({t.name.substr(kBody.size()), t.tensor});
  return io::SaveSafetensors(path, body);
}

}  // namespace mlperf::models
