#include "reference/trainer/trainer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "base/check.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/fp8.h"
#include "reference/kernels/precision.h"

namespace mlperf::train {
namespace {

// The ranges of the trainable arena that are all-reduced: everything but
// the sharded parameters.
std::vector<dist::Bucket> ReplicatedRanges(const models::Model& model, int64_t count) {
  const std::vector<TensorSlice> slices = model.slices();
  const std::vector<const layers::Parameter*> params = model.trainable_parameters();
  std::vector<dist::Bucket> ranges;
  int64_t begin = 0;
  for (size_t i = 0; i < slices.size(); ++i) {
    if (!params[i]->sharding.sharded()) continue;
    if (slices[i].offset > begin) ranges.push_back({begin, slices[i].offset});
    begin = slices[i].offset + slices[i].numel;
  }
  if (count > begin) ranges.push_back({begin, count});
  return ranges;
}

}  // namespace

Trainer::Trainer(models::Model& model, std::unique_ptr<optim::Optimizer> optimizer,
                 std::unique_ptr<optim::LearningRateSchedule> schedule, const TrainerConfig& config,
                 dist::Communicator& comm, ops::Stream comm_stream)
    : model_(model),
      optimizer_(std::move(optimizer)),
      schedule_(std::move(schedule)),
      config_(config),
      comm_(comm),
      comm_stream_(comm_stream) {
  MLPERF_CHECK(optimizer_ != nullptr && schedule_ != nullptr);
  MLPERF_CHECK(config.gradient_accumulation_steps >= 1);
  MLPERF_CHECK_MSG(!(optimizer_->ReadsGlobalGradientNorm() && model.has_sharded_parameters() &&
                     comm.world_size() > 1),
                   "an optimizer that clips by the global gradient norm needs replicated "
                   "parameters (a sharded one's norm would be each rank's own)");
  MLPERF_CHECK_MSG(!(optimizer_->ReadsGlobalGradientNorm() && model.tensor_parallel() > 1),
                   "an optimizer that clips by the global gradient norm reads one rank's slices "
                   "of a tensor-parallel model; clip over the tensor-parallel ranks "
                   "(optim::DistributedOptimizer's TensorParallelNorm)");
  MLPERF_CHECK_MSG(!(optimizer_->ReducesGradients() && model.has_sharded_parameters()),
                   "the distributed optimizer needs replicated parameters");
  const int64_t count = static_cast<int64_t>(model.parameters().size());
  // An optimizer that reduces the gradients itself gets them unreduced.
  if (!optimizer_->ReducesGradients())
    buckets_ = dist::PlanBuckets(ReplicatedRanges(model, count), config.bucket_elements);
  // The optimizer state, the accumulation sums and the device scalars in
  // one arena next to the model.
  const int64_t accumulated = config.gradient_accumulation_steps > 1 ? count : 1;
  const auto carve = [&](core::Arena& arena) {
    optimizer_->Allocate(arena, count);
    grad_sum_ = arena.Allocate({accumulated});
    loss_sum_ = arena.Allocate({1});
    lr_ = arena.Allocate({1});
    const int64_t scaled = config.dynamic_loss_scaling ? 1 : 0;
    loss_scale_ = arena.Allocate({scaled});
    growth_tracker_ = arena.AllocateZeroed({scaled}, core::DType::kI32);
    found_inf_ = arena.AllocateZeroed({scaled});
    const int64_t amaxes = comm.world_size() > 1
                               ? ops::kFp8Roles * static_cast<int64_t>(model.fp8_scaling().size())
                               : 0;
    fp8_amax_ = arena.Allocate({amaxes});
    fp8_gathered_ = arena.Allocate({amaxes * comm.world_size()});
  };
  core::Arena measuring = core::Arena::Measuring(model.device());
  carve(measuring);
  state_.emplace(model.device(), measuring.used());
  carve(*state_);
  optimizer_state_ = optimizer_->State();
  if (config.dynamic_loss_scaling) {
    MLPERF_CHECK(config.initial_loss_scale > 0.0f);
    ops::Fill(loss_scale_, config.initial_loss_scale);
    model_.set_loss_scale(loss_scale_.f32());
  }
  // Overlapped all-reduce needs the final gradients of a step to come from
  // one backward pass, so accumulation reduces after the last micro-batch.
  if (on_device() && comm_.world_size() > 1 && config.gradient_accumulation_steps == 1)
    model_.set_gradients_ready_hook([this](int64_t ready_from) { LaunchReadyBuckets(ready_from); });
  // A recording cannot join the legacy default stream (comm_stream null).
  record_steps_ = config.cuda_graph && on_device() && model.CapturableStep() &&
                  config.gradient_accumulation_steps == 1 && comm_.CollectivesCapturable() &&
                  (comm_.world_size() == 1 || comm_stream_.native() != nullptr);
}

Trainer::~Trainer() {
  model_.set_gradients_ready_hook(nullptr);
  model_.set_loss_scale(nullptr);
}

float Trainer::LossScaleToHost() const {
  float scale = 1.0f;
  if (loss_scale_.numel() > 0)
    ops::CopyBytes(&scale, core::Device::kCpu, loss_scale_.data(), model_.device(), sizeof(float));
  return scale;
}

bool Trainer::LastStepSkipped() const {
  float found = 0.0f;
  if (found_inf_.numel() > 0)
    ops::CopyBytes(&found, core::Device::kCpu, found_inf_.data(), model_.device(), sizeof(float));
  return found != 0.0f;
}

std::vector<float> Trainer::OptimizerStateToHost(const std::string& name) const {
  for (const optim::StateTensor& s : optimizer_state_) {
    if (s.name != name || s.tensor.dtype() != core::DType::kF32) continue;
    std::vector<float> host(static_cast<size_t>(s.tensor.numel()));
    ops::CopyBytes(host.data(), core::Device::kCpu, s.tensor.data(), model_.device(),
                   s.tensor.bytes());
    return host;
  }
  return {};
}

void Trainer::LaunchReadyBuckets(int64_t ready_from) {
  if (next_bucket_ >= buckets_.size() || buckets_[next_bucket_].begin < ready_from) return;
  // One event orders every bucket launched here after the gradients queued so far.
  ops::StreamWaitsFor(comm_stream_, ops::ComputeStream());
  float* g = model_.gradients().data();
  for (; next_bucket_ < buckets_.size() && buckets_[next_bucket_].begin >= ready_from;
       ++next_bucket_) {
    const dist::Bucket& b = buckets_[next_bucket_];
    comm_.AllReduceAverage(g + b.begin, b.end - b.begin);
  }
}

void Trainer::DeviceAllReduce(float* data, int64_t count, bool average) const {
  ops::StreamWaitsFor(comm_stream_, ops::ComputeStream());
  if (average) {
    comm_.AllReduceAverage(data, count);
  } else {
    comm_.AllReduceSum(data, count);
  }
  ops::StreamWaitsFor(ops::ComputeStream(), comm_stream_);
}

float Trainer::AccumulateGradients(std::span<const models::Batch> micro_batches) {
  const int k = static_cast<int>(micro_batches.size());
  const core::Device device = model_.device();
  const int64_t count = static_cast<int64_t>(model_.gradients().size());
  const core::Tensor grads(model_.gradients().data(), {count}, core::DType::kF32, device);
  const core::Tensor grad_sum(grad_sum_.data(), {count}, core::DType::kF32, device);
  float loss = 0.0f;
  for (int i = 0; i < k; ++i) {
    if (!on_device()) {
      loss += model_.ForwardTrain(micro_batches[i]);
    } else {
      model_.ForwardTrainAsync(micro_batches[i]);
      // The loss stays on the device until the step ends.
      if (k > 1 && i == 0) ops::Copy(model_.loss_tensor(), loss_sum_);
      if (k > 1 && i > 0) ops::Accumulate(model_.loss_tensor(), loss_sum_);
    }
    next_bucket_ = 0;
    model_.Backward();  // on a device with one micro-batch, the hook sends the buckets
    if (k == 1) break;
    if (i == 0) {
      ops::Copy(grads, grad_sum);
    } else {
      ops::Accumulate(grads, grad_sum);
    }
  }
  if (k > 1) {
    // Every micro-batch loss is a mean over its samples: their mean is the
    // gradient of the mean over the whole local batch.
    ops::Copy(grad_sum, grads);
    ops::Scale(grads, 1.0f / static_cast<float>(k));
    if (on_device()) ops::Scale(loss_sum_, 1.0f / static_cast<float>(k));
  }
  return loss / static_cast<float>(k);
}

float Trainer::TrainStep(std::span<const models::Batch> micro_batches) {
  if (!on_device()) {
    MLPERF_CHECK(static_cast<int>(micro_batches.size()) == config_.gradient_accumulation_steps);
    return HostStep(micro_batches);
  }
  QueueStep(micro_batches);
  // The one read-back of a step: its loss, averaged with the gradients.
  const core::Tensor& device_loss = micro_batches.size() == 1 ? model_.loss_tensor() : loss_sum_;
  float loss = 0.0f;
  ops::CopyBytes(&loss, core::Device::kCpu, device_loss.data(), model_.device(), sizeof(float));
  if (const double term = optimizer_->LossTerm(model_.device()); term != 0.0)
    loss += static_cast<float>(term);
  return loss;
}

void Trainer::QueueStep(std::span<const models::Batch> micro_batches) {
  MLPERF_CHECK(static_cast<int>(micro_batches.size()) == config_.gradient_accumulation_steps);
  if (!on_device()) {
    HostStep(micro_batches);
    return;
  }
  const float lr = static_cast<float>(learning_rate());
  ops::CopyBytes(lr_.data(), model_.device(), &lr, core::Device::kCpu, sizeof(float));
  if (record_steps_) {
    RecordedDeviceStep(micro_batches[0]);
  } else {
    QueueDeviceStep(micro_batches);
  }
  ++step_;
}

float Trainer::HostStep(std::span<const models::Batch> micro_batches) {
  float loss = AccumulateGradients(micro_batches);
  dist::AllReduceGradients(comm_, model_.gradients().data(), buckets_);
  UpdateParameters();
  if (const double term = optimizer_->LossTerm(model_.device()); term != 0.0)
    loss += static_cast<float>(term);
  ++step_;
  comm_.AllReduceAverage(&loss, 1);
  return loss;
}

void Trainer::QueueDeviceStep(std::span<const models::Batch> micro_batches) {
  AccumulateGradients(micro_batches);
  if (comm_.world_size() > 1) {
    LaunchReadyBuckets(0);
    MLPERF_CHECK(next_bucket_ == buckets_.size());
    // The loss joins the collectives; the optimizer waits for all of them.
    const core::Tensor& loss = micro_batches.size() == 1 ? model_.loss_tensor() : loss_sum_;
    DeviceAllReduce(loss.f32(), 1, /*average=*/true);
  }
  UpdateParameters();
}

void Trainer::RecordedDeviceStep(const models::Batch& batch) {
  model_.UploadTrainingBatch(batch);
  const int64_t tracked = model_.num_batches_tracked();
  const models::Batch uploaded;  // no inputs: the batch on the device
  const core::DType precision = ops::ComputePrecision();
  const bool settled =
      settled_at_ == ops::DeviceGraph::ResourceGeneration() && settled_precision_ == precision;
  if (!settled) graph_.Reset();
  // Recording right after a step that ran as queued at the same resource
  // generation: algorithm choices, scratch sizes and the chunk table are
  // settled, so the recording allocates and uploads nothing.
  if (settled && !graph_.Current())
    graph_.Capture([&] { QueueDeviceStep(std::span(&uploaded, 1)); });
  if (graph_.Current()) {
    graph_.Replay();
    ++replayed_steps_;
  } else {
    QueueDeviceStep(std::span(&uploaded, 1));
    settled_at_ = ops::DeviceGraph::ResourceGeneration();
    settled_precision_ = precision;
  }
  // The host-side count a replay does not advance.
  model_.set_num_batches_tracked(tracked + 1);
}

void Trainer::UpdateParameters() {
  // After the all-reduce every rank holds the same sums, so every rank finds
  // the same overflow and skips the same steps.
  const core::Device device = model_.device();
  const float* found_inf = nullptr;
  if (config_.dynamic_loss_scaling) {
    ops::UnscaleAndCheckFinite(device, model_.gradients().data(),
                               static_cast<int64_t>(model_.gradients().size()), loss_scale_.f32(),
                               found_inf_.f32());
    found_inf = found_inf_.f32();
  }
  // On a device the rate is read where QueueStep wrote it.
  optimizer_->Step({.device = device,
                    .w = model_.parameters().data(),
                    .g = model_.gradients().data(),
                    .count = static_cast<int64_t>(model_.parameters().size()),
                    .lr = static_cast<float>(learning_rate()),
                    .lr_at = on_device() ? lr_.f32() : nullptr,
                    .found_inf = found_inf});
  if (config_.dynamic_loss_scaling)
    ops::UpdateLossScale(device, config_.loss_scale_params, loss_scale_.f32(),
                         growth_tracker_.as<int32_t>(), found_inf);
  UpdateFp8Scaling();
}

void Trainer::UpdateFp8Scaling() {
  const std::vector<core::Tensor>& states = model_.fp8_scaling();
  if (states.empty()) return;
  if (comm_.world_size() == 1) {
    for (const core::Tensor& s : states) ops::Fp8UpdateScaling(s, s.f32() + ops::kFp8AmaxAt, 0, 1);
    return;
  }
  // Every rank scales alike (as Transformer Engine reduces amaxes over the
  // data-parallel group): each layer's amaxes gathered from all ranks.
  const core::Device device = model_.device();
  const int64_t n = static_cast<int64_t>(states.size()), row = ops::kFp8Roles * n;
  for (int64_t i = 0; i < n; ++i) {
    ops::CopyBytes(fp8_amax_.f32() + ops::kFp8Roles * i, device,
                   states[static_cast<size_t>(i)].f32() + ops::kFp8AmaxAt, device,
                   ops::kFp8Roles * sizeof(float));
  }
  if (on_device()) ops::StreamWaitsFor(comm_stream_, ops::ComputeStream());
  comm_.AllGather(fp8_amax_.data(), fp8_gathered_.data(), row * sizeof(float));
  if (on_device()) ops::StreamWaitsFor(ops::ComputeStream(), comm_stream_);
  for (int64_t i = 0; i < n; ++i) {
    ops::Fp8UpdateScaling(states[static_cast<size_t>(i)], fp8_gathered_.f32() + ops::kFp8Roles * i,
                          row, comm_.world_size());
  }
}

void Trainer::WarmUp(int steps) {
  if (steps <= 0) return;
  // Host copies on every device: this runs once, before run_start.
  const HostState saved = Snapshot();
  const models::OwnedBatch synthetic = model_.SyntheticBatch();
  const std::vector<models::Batch> micro_batches(
      static_cast<size_t>(config_.gradient_accumulation_steps), synthetic.batch);
  for (int s = 0; s < steps; ++s) TrainStep(micro_batches);
  Restore(saved);
}

Trainer::HostState Trainer::Snapshot() const {
  HostState state{.params = model_.ParametersToHost(),
                  .buffers = model_.BuffersToHost(),
                  .step = step_,
                  .num_batches_tracked = model_.num_batches_tracked()};
  for (const optim::StateTensor& s : optimizer_state_) {
    std::vector<std::byte>& host = state.optimizer.emplace_back(s.tensor.bytes());
    ops::CopyBytes(host.data(), core::Device::kCpu, s.tensor.data(), model_.device(), host.size());
  }
  if (config_.dynamic_loss_scaling) {
    state.loss_scale = LossScaleToHost();
    ops::CopyBytes(&state.growth_tracker, core::Device::kCpu, growth_tracker_.data(),
                   model_.device(), sizeof(int32_t));
  }
  return state;
}

void Trainer::Restore(const HostState& state) {
  model_.ParametersFromHost(state.params);
  model_.BuffersFromHost(state.buffers);
  for (size_t i = 0; i < optimizer_state_.size(); ++i) {
    const core::Tensor& t = optimizer_state_[i].tensor;
    ops::CopyBytes(t.data(), model_.device(), state.optimizer[i].data(), core::Device::kCpu,
                   t.bytes());
  }
  if (config_.dynamic_loss_scaling) {
    ops::CopyBytes(loss_scale_.data(), model_.device(), &state.loss_scale, core::Device::kCpu,
                   sizeof(float));
    ops::CopyBytes(growth_tracker_.data(), model_.device(), &state.growth_tracker,
                   core::Device::kCpu, sizeof(int32_t));
  }
  ops::Synchronize(model_.device());
  step_ = state.step;
  model_.set_num_batches_tracked(state.num_batches_tracked);
}

void Trainer::AllReduceHostSum(std::span<float> values) const {
  if (comm_.world_size() == 1 || values.empty()) return;
  if (!on_device()) {
    comm_.AllReduceSum(values.data(), static_cast<int64_t>(values.size()));
    return;
  }
  // A device communicator reduces device buffers: staged through one, once
  // per checkpoint.
  core::Arena staging(model_.device(), values.size_bytes());
  const core::Tensor d = staging.Allocate({static_cast<int64_t>(values.size())});
  ops::CopyBytes(d.data(), model_.device(), values.data(), core::Device::kCpu, values.size_bytes());
  DeviceAllReduce(d.f32(), d.numel(), /*average=*/false);
  ops::CopyBytes(values.data(), core::Device::kCpu, d.data(), model_.device(), values.size_bytes());
}

Trainer::CheckpointView Trainer::MakeCheckpointView(HostState& state, bool gather) const {
  CheckpointView view;
  // A sharded tensor's whole: this rank's rows at their place, zeros
  // elsewhere, summed over the ranks.
  const auto whole = [&](const core::Tensor& local, const layers::Sharding& sharding) {
    auto g = std::make_unique<Gathered>();
    const int64_t row = local.shape().With(0, 1).numel();
    g->full.assign(static_cast<size_t>(sharding.full_rows * row), 0.0f);
    g->local = local;
    g->first_row = sharding.first_row;
    if (gather) {
      if (local.bytes() > 0)
        std::memcpy(g->full.data() + sharding.first_row * row, local.data(), local.bytes());
      AllReduceHostSum(g->full);
    }
    const core::Tensor t(g->full.data(), local.shape().With(0, sharding.full_rows),
                         core::DType::kF32);
    view.gathered.push_back(std::move(g));
    return t;
  };
  const std::vector<const layers::Parameter*> trainable = model_.trainable_parameters();
  const std::vector<TensorSlice> slices = model_.slices();
  std::vector<io::NamedTensor> model_tensors = model_.NamedHostTensors(state.params, state.buffers);
  for (size_t i = 0; i < trainable.size(); ++i) {
    if (trainable[i]->sharding.sharded())
      model_tensors[i].tensor = whole(model_tensors[i].tensor, trainable[i]->sharding);
  }
  // Buffers follow the trainable parameters (NamedHostTensors).
  const std::vector<layers::NamedBuffer>& buffers = model_.buffer_tensors();
  for (size_t k = 0; k < buffers.size(); ++k) {
    io::NamedTensor& named = model_tensors[trainable.size() + k];
    if (buffers[k].sharding.sharded()) named.tensor = whole(named.tensor, buffers[k].sharding);
  }
  view.named = std::move(model_tensors);
  for (size_t k = 0; k < optimizer_state_.size(); ++k) {
    const optim::StateTensor& s = optimizer_state_[k];
    std::vector<std::byte>& host = state.optimizer[k];
    if (!s.per_element) {
      view.named.push_back(
          {"trainer." + s.name, core::Tensor(host.data(), s.tensor.shape(), s.tensor.dtype())});
      continue;
    }
    float* values = reinterpret_cast<float*>(host.data());
    for (size_t i = 0; i < trainable.size(); ++i) {
      const core::Tensor local(values + slices[i].offset, trainable[i]->value.shape(),
                               core::DType::kF32);
      view.named.push_back(
          {fmt::format("trainer.{}.{}", s.name, trainable[i]->name),
           trainable[i]->sharding.sharded() ? whole(local, trainable[i]->sharding) : local});
    }
  }
  if (config_.dynamic_loss_scaling) {
    view.named.push_back(
        {"trainer.loss_scale", core::Tensor(&state.loss_scale, core::Shape(), core::DType::kF32)});
    view.named.push_back({"trainer.loss_scale_growth_tracker",
                          core::Tensor(&state.growth_tracker, core::Shape(), core::DType::kI32)});
  }
  view.named.push_back(
      {"trainer.step", core::Tensor(&state.step, core::Shape(), core::DType::kI64)});
  view.named.push_back(
      {"trainer.num_batches_tracked",
       core::Tensor(&state.num_batches_tracked, core::Shape(), core::DType::kI64)});
  return view;
}

absl::Status Trainer::SaveCheckpoint(const std::string& path) const {
  // Each rank holds slices of the layers, not rows of a sharded parameter.
  if (model_.tensor_parallel() > 1)
    return absl::UnimplementedError("checkpoints of a tensor-parallel model are not written yet");
  HostState state = Snapshot();
  const CheckpointView view = MakeCheckpointView(state, /*gather=*/true);
  absl::Status status;
  if (comm_.rank() == 0) status = io::SaveSafetensors(path, view.named);
  return status;
}

absl::Status Trainer::LoadCheckpoint(const std::string& path) {
  if (model_.tensor_parallel() > 1)
    return absl::UnimplementedError("checkpoints of a tensor-parallel model are not read yet");
  // Everything lands in host copies first: a failed load changes nothing.
  HostState state = Snapshot();
  CheckpointView view = MakeCheckpointView(state, /*gather=*/false);
  if (absl::StatusOr<io::Metadata> read = io::LoadSafetensors(path, view.named); !read.ok())
    return read.status();
  for (const std::unique_ptr<Gathered>& g : view.gathered) {
    const int64_t row = g->local.shape().With(0, 1).numel();
    if (g->local.bytes() > 0)
      std::memcpy(g->local.data(), g->full.data() + g->first_row * row, g->local.bytes());
  }
  Restore(state);
  return absl::OkStatus();
}

}  // namespace mlperf::train
