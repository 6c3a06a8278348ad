#include "reference/models/model.h"

#include <cstring>
#include <utility>

#include "base/check.h"
#include "fmt/format.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {
namespace {

std::span<float> FlatView(const std::optional<core::Arena>& arena) {
  return {static_cast<float*>(arena->base()), arena->used() / sizeof(float)};
}

// `t` (inside `arena`) at the same offset inside a host copy of the arena.
core::Tensor HostTwin(const core::Tensor& t, const core::Arena& arena, std::vector<float>& host) {
  const size_t offset = static_cast<size_t>(static_cast<const char*>(t.data()) -
                                            static_cast<const char*>(arena.base()));
  MLPERF_CHECK(offset + t.bytes() <= host.size() * sizeof(float));
  return core::Tensor(reinterpret_cast<char*>(host.data()) + offset, t.shape(), t.dtype(),
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

core::Tensor OwnedBatch::Add(core::Shape shape, core::DType dtype) {
  core::Tensor view(nullptr, shape, dtype);
  storage.emplace_back(view.bytes());
  core::Tensor t(storage.back().data(), shape, dtype);
  batch.inputs.push_back(t);
  return t;
}

Batch CopyBatch(const Batch& from, OwnedBatch& into) {
  into = OwnedBatch();
  for (const core::Tensor& t : from.inputs) {
    const core::Tensor copy = into.Add(t.shape(), t.dtype());
    std::memcpy(copy.data(), t.data(), t.bytes());
  }
  into.batch.count = from.count;
  return into.batch;
}

Model::Model(core::Device device, int64_t batch_size) : device_(device), batch_(batch_size) {
  MLPERF_CHECK(batch_size > 0);
  MLPERF_CHECK_MSG(device == core::Device::kCpu || ops::CudaAvailable(),
                   "a kCuda model needs a CUDA build and a device");
}

Model::~Model() = default;

void Model::AllocateArenas(const std::function<void(const layers::ModelArenas&)>& build) {
  core::Arena p = core::Arena::Measuring(device_), g = core::Arena::Measuring(device_);
  core::Arena b = core::Arena::Measuring(device_), a = core::Arena::Measuring(device_);
  core::Arena f = core::Arena::Measuring(device_);
  registry_ = layers::ParameterRegistry();
  build({&p, &g, &b, &a, &f});
  params_.emplace(device_, p.used());
  grads_.emplace(device_, g.used());
  buffers_.emplace(device_, b.used());
  activations_.emplace(device_, a.used());
  frozen_.emplace(device_, f.used());
  for (core::Arena* arena : {&*params_, &*grads_, &*buffers_, &*frozen_})
    ops::ZeroBytes(arena->base(), device_, arena->capacity());
  ops::Synchronize(device_);
  registry_ = layers::ParameterRegistry();
  build({&*params_, &*grads_, &*buffers_, &*activations_, &*frozen_});
}

size_t Model::MeasureArenas(core::Device device,
                            const std::function<void(const layers::ModelArenas&)>& build) {
  const ArenaBytes m = MeasureEachArena(device, build);
  return static_cast<size_t>(m.params + m.grads + m.buffers + m.activations + m.frozen);
}

Model::ArenaBytes Model::MeasureEachArena(
    core::Device device, const std::function<void(const layers::ModelArenas&)>& build) {
  core::Arena p = core::Arena::Measuring(device), g = core::Arena::Measuring(device);
  core::Arena b = core::Arena::Measuring(device), a = core::Arena::Measuring(device);
  core::Arena f = core::Arena::Measuring(device);
  build({&p, &g, &b, &a, &f});
  const auto bytes = [](const core::Arena& arena) { return static_cast<int64_t>(arena.used()); };
  return {bytes(p), bytes(g), bytes(b), bytes(a), bytes(f)};
}

void Model::UploadTrainingBatch(const Batch&) {
  MLPERF_CHECK_MSG(false, "this model's training step cannot be recorded (CapturableStep)");
}

float Model::ForwardTrain(const Batch& batch) {
  ForwardTrainAsync(batch);
  float loss = 0.0f;
  ops::CopyBytes(&loss, core::Device::kCpu, loss_.data(), device_, sizeof(float));
  return loss;
}

std::span<float> Model::parameters() { return FlatView(params_); }
std::span<float> Model::gradients() { return FlatView(grads_); }
std::span<float> Model::buffers() { return FlatView(buffers_); }
std::vector<float> Model::ParametersToHost() const { return ArenaToHost(*params_); }
std::vector<float> Model::GradientsToHost() const { return ArenaToHost(*grads_); }
std::vector<float> Model::BuffersToHost() const { return ArenaToHost(*buffers_); }
void Model::ParametersFromHost(std::span<const float> values) { ArenaFromHost(*params_, values); }
void Model::BuffersFromHost(std::span<const float> values) { ArenaFromHost(*buffers_, values); }

std::vector<std::byte> Model::FrozenToHost() const {
  std::vector<std::byte> host(frozen_->used());
  if (host.empty()) return host;
  ops::CopyBytes(host.data(), core::Device::kCpu, frozen_->base(), device_, host.size());
  return host;
}

void Model::FrozenFromHost(std::span<const std::byte> bytes) {
  MLPERF_CHECK_MSG(bytes.size() == frozen_->used(), "arena size mismatch");
  if (bytes.empty()) return;
  ops::CopyBytes(frozen_->base(), device_, bytes.data(), core::Device::kCpu, bytes.size());
  ops::Synchronize(device_);
}

std::vector<float> Model::ToHost(const core::Tensor& t) const { return ops::ToHostFloats(t); }

void Model::SetParameter(const layers::Parameter& p, std::span<const float> values) {
  MLPERF_CHECK(static_cast<int64_t>(values.size()) == p.value.numel());
  const core::Tensor host(const_cast<float*>(values.data()), p.value.shape(), core::DType::kF32);
  if (p.value.dtype() == core::DType::kF32) {
    ops::Copy(host, p.value);
  } else {
    std::vector<std::byte> stored(p.value.bytes());
    const core::Tensor typed(stored.data(), p.value.shape(), p.value.dtype());
    ops::Cast(host, typed);
    ops::Copy(typed, p.value);
  }
  ops::Synchronize(device_);
}

int64_t Model::num_parameters() const {
  int64_t total = 0;
  for (const layers::Parameter& p : registry_.parameters) total += p.value.numel();
  return total;
}

std::vector<TensorSlice> Model::slices() const {
  const float* base = static_cast<const float*>(params_->base());
  std::vector<TensorSlice> out;
  for (const layers::Parameter* p : trainable_parameters())
    out.push_back({p->value.f32() - base, p->value.numel(), p->no_weight_decay, p->no_trust_ratio});
  return out;
}

std::vector<const layers::Parameter*> Model::trainable_parameters() const {
  std::vector<const layers::Parameter*> out;
  for (const layers::Parameter& p : registry_.parameters)
    if (p.trainable) out.push_back(&p);
  return out;
}

bool Model::has_sharded_parameters() const {
  for (const layers::Parameter& p : registry_.parameters)
    if (p.sharding.sharded()) return true;
  return false;
}

std::vector<std::string> Model::parameter_names() const {
  std::vector<std::string> names;
  for (const layers::Parameter& p : registry_.parameters) names.push_back(p.name);
  return names;
}

int64_t Model::GradientOffset(size_t parameter) const {
  return static_cast<int64_t>(
             static_cast<const char*>(registry_.parameters[parameter].grad.data()) -
             static_cast<const char*>(grads_->base())) /
         static_cast<int64_t>(sizeof(float));
}

core::Tensor Model::HostParameter(const core::Tensor& t, std::vector<float>& host) const {
  return HostTwin(t, *params_, host);
}

core::Tensor Model::HostBuffer(const core::Tensor& t, std::vector<float>& host) const {
  return HostTwin(t, *buffers_, host);
}

std::vector<io::NamedTensor> Model::NamedHostTensors(std::vector<float>& params,
                                                     std::vector<float>& buffers,
                                                     std::vector<std::byte>* frozen) const {
  std::vector<io::NamedTensor> named;
  for (const layers::Parameter& p : registry_.parameters) {
    if (p.trainable) {
      named.push_back({p.name, HostParameter(p.value, params)});
    } else if (frozen != nullptr) {
      const size_t offset = static_cast<size_t>(static_cast<const char*>(p.value.data()) -
                                                static_cast<const char*>(frozen_->base()));
      MLPERF_CHECK(offset + p.value.bytes() <= frozen->size());
      named.push_back(
          {p.name, core::Tensor(frozen->data() + offset, p.value.shape(), p.value.dtype())});
    }
  }
  for (const layers::NamedBuffer& b : registry_.buffers)
    named.push_back({b.name, HostBuffer(b.value, buffers)});
  return named;
}

absl::Status Model::SaveSafetensors(const std::string& path) const {
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  std::vector<std::byte> frozen = FrozenToHost();
  std::vector<io::NamedTensor> named = NamedHostTensors(params, buffers, &frozen);
  std::vector<int64_t> counts(registry_.batch_norms.size(), num_batches_tracked_);
  for (size_t i = 0; i < counts.size(); ++i)
    named.push_back({registry_.batch_norms[i] + ".num_batches_tracked",
                     core::Tensor(&counts[i], core::Shape(), core::DType::kI64)});
  return io::SaveSafetensors(path, named, {{"format", "pt"}});
}

absl::Status Model::LoadSafetensors(const std::string& path) {
  absl::StatusOr<io::SafetensorsFile> file = io::SafetensorsFile::Read(path);
  if (!file.ok()) return file.status();
  auto copy = [&](const std::string& name, const core::Tensor& dst) -> absl::Status {
    absl::Status s = file->CopyTo(name, dst);
    if (!s.ok())
      return absl::InvalidArgumentError(fmt::format("{}: {}", path, std::string(s.message())));
    return absl::OkStatus();
  };
  // Loaded into host copies first: a failed load leaves the model as it was.
  std::vector<float> params = ParametersToHost(), buffers = BuffersToHost();
  std::vector<std::byte> frozen = FrozenToHost();
  for (const io::NamedTensor& t : NamedHostTensors(params, buffers, &frozen)) {
    // FP8 scaling states are optional: a file from a run in another precision
    // leaves them as they are (a new layer's).
    if (t.name.ends_with(".fp8_scaling") && file->tensors().count(t.name) == 0) continue;
    if (absl::Status s = copy(t.name, t.tensor); !s.ok()) return s;
  }
  // Optional: files from older torch versions or other tools may lack it.
  if (!registry_.batch_norms.empty()) {
    const std::string counter = registry_.batch_norms.front() + ".num_batches_tracked";
    if (file->tensors().count(counter) != 0) {
      int64_t count = 0;
      if (absl::Status s = copy(counter, core::Tensor(&count, core::Shape(), core::DType::kI64));
          !s.ok())
        return s;
      num_batches_tracked_ = count;
    }
  }
  ParametersFromHost(params);
  BuffersFromHost(buffers);
  FrozenFromHost(frozen);
  return absl::OkStatus();
}

void Model::ScaleLossGradient(const core::Tensor& dloss) const {
  if (loss_scale_ != nullptr) ops::ScaleBy(dloss, loss_scale_);
}

}  // namespace mlperf::models
