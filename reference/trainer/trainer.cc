#include "reference/trainer/trainer.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::train {

optim::PolyWarmupSchedule MakeSchedule(const TrainerConfig& config) {
  return {.base_lr = config.base_lr,
          .end_lr = config.end_lr,
          .warmup_steps = static_cast<int64_t>(config.warmup_epochs *
                                               static_cast<double>(config.steps_per_epoch)),
          .train_steps = config.train_epochs * config.steps_per_epoch,
          .power = config.poly_power};
}

Trainer::Trainer(models::Model& model, const TrainerConfig& config, dist::Communicator& comm,
                 void* comm_stream)
    : model_(model),
      config_(config),
      comm_(comm),
      schedule_(MakeSchedule(config)),
      comm_stream_(comm_stream) {
  MLPERF_CHECK(config.gradient_accumulation_steps >= 1);
  MLPERF_CHECK(config.schedule == ScheduleKind::kBert ? config.train_steps > 0
                                                      : config.steps_per_epoch > 0);
  buckets_ =
      dist::PlanBuckets(static_cast<int64_t>(model.gradients().size()), config.bucket_elements);
  lars_slices_ = model.slices();
  for (size_t i = 0; i < lars_slices_.size(); ++i) {
    TensorSlice s = lars_slices_[i];
    s.excluded = false;
    decayed_slices_.push_back(s);
    s.excluded = true;
    sgd_slices_.push_back(s);
    // resnet_runnable.py: l2 over variables without 'batch_normalization' in
    // the name, so the FC bias is included (it is not in the LARS skip sense).
    if (!model.parameter_tensors()[i].batch_norm) l2_slices_.push_back(s);
  }
  // Momentum, the accumulation sums, and on a device the scratch of the SGD
  // L2 term and of scalar reductions, in one arena next to the model.
  const int64_t count = static_cast<int64_t>(model.parameters().size());
  const int64_t accumulated = config.gradient_accumulation_steps > 1 ? count : 1;
  int64_t largest_l2 = 1;
  for (const TensorSlice& s : l2_slices_) largest_l2 = std::max(largest_l2, s.numel);
  const bool lamb = config.optimizer == OptimizerKind::kLamb;
  core::Tensor v;
  const auto carve = [&](core::Arena& arena) {
    const core::Tensor m = arena.AllocateZeroed({count});
    v = arena.AllocateZeroed({lamb ? count : 0});
    lamb_step_ = arena.AllocateZeroed({lamb ? 1 : 0}, core::DType::kI32);
    grad_sum_ = arena.Allocate({accumulated});
    loss_sum_ = arena.Allocate({1});
    l2_scratch_ = arena.Allocate({largest_l2});
    l2_sums_ = arena.Allocate({std::max<int64_t>(1, static_cast<int64_t>(l2_slices_.size()))});
    reduce_scratch_ = arena.Allocate({4});
    lr_ = arena.Allocate({1});
    const int64_t scaled = config.dynamic_loss_scaling ? 1 : 0;
    loss_scale_ = arena.Allocate({scaled});
    growth_tracker_ = arena.AllocateZeroed({scaled}, core::DType::kI32);
    found_inf_ = arena.AllocateZeroed({scaled});
    return m;
  };
  core::Arena measuring = core::Arena::Measuring(model.device());
  carve(measuring);
  state_.emplace(model.device(), measuring.used());
  const core::Tensor m = carve(*state_);
  momentum_ = {m.f32(), static_cast<size_t>(count)};
  second_moment_ = {v.f32(), static_cast<size_t>(v.numel())};
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
                  (comm_.world_size() == 1 || comm_stream_ != nullptr);
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

std::vector<float> Trainer::MomentumToHost() const {
  std::vector<float> host(momentum_.size());
  ops::CopyBytes(host.data(), core::Device::kCpu, momentum_.data(), model_.device(),
                 momentum_.size_bytes());
  return host;
}

std::vector<float> Trainer::SecondMomentToHost() const {
  std::vector<float> host(second_moment_.size());
  ops::CopyBytes(host.data(), core::Device::kCpu, second_moment_.data(), model_.device(),
                 second_moment_.size_bytes());
  return host;
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

void Trainer::DeviceAllReduce(float* data, int64_t count, bool average) {
  ops::StreamWaitsFor(comm_stream_, ops::ComputeStream());
  if (average) {
    comm_.AllReduceAverage(data, count);
  } else {
    comm_.AllReduceSum(data, count);
  }
  ops::StreamWaitsFor(ops::ComputeStream(), comm_stream_);
}

double Trainer::AddL2Gradient(float wd) {
  float* w = model_.parameters().data();
  float* g = model_.gradients().data();
  double sum_sq = 0.0;
  for (const TensorSlice& s : l2_slices_)
    for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
      sum_sq += static_cast<double>(w[i]) * w[i];
      g[i] += 2.0f * wd * w[i];
    }
  return wd * sum_sq;
}

void Trainer::QueueL2Gradient(float wd) {
  // Per slice a dot product w.w (a 1x1 GEMM, in fp32 whatever the compute
  // precision) into l2_sums_, and g += (2 wd) w through the scratch copy.
  float* w = model_.parameters().data();
  float* g = model_.gradients().data();
  const core::Device device = model_.device();
  const ops::PrecisionScope fp32(core::DType::kF32);
  for (size_t k = 0; k < l2_slices_.size(); ++k) {
    const TensorSlice& s = l2_slices_[k];
    const core::Tensor ws(w + s.offset, {1, s.numel}, core::DType::kF32, device);
    const core::Tensor gs(g + s.offset, {s.numel}, core::DType::kF32, device);
    const core::Tensor scratch(l2_scratch_.data(), {s.numel}, core::DType::kF32, device);
    ops::LinearForward(ws, ws, core::Tensor(),
                       core::Tensor(l2_sums_.f32() + k, {1, 1}, core::DType::kF32, device));
    ops::Copy(ws.Reshaped({s.numel}), scratch);
    ops::Scale(scratch, 2.0f * wd);
    ops::Accumulate(scratch, gs);
  }
}

double Trainer::L2LossFromDevice() const {
  std::vector<float> sums(l2_slices_.size());
  ops::CopyBytes(sums.data(), core::Device::kCpu, l2_sums_.data(), model_.device(),
                 sums.size() * sizeof(float));
  double sum_sq = 0.0;
  for (float v : sums) sum_sq += v;
  return static_cast<float>(config_.weight_decay) * sum_sq;  // as AddL2Gradient's
}

double Trainer::LearningRateAt(int64_t step) const {
  if (config_.schedule == ScheduleKind::kPolyWarmup) return optim::LearningRate(schedule_, step);
  if (config_.schedule == ScheduleKind::kBert)
    return optim::LearningRate(optim::BertSchedule{.init_lr = config_.base_lr,
                                                   .num_train_steps = config_.train_steps,
                                                   .num_warmup_steps = config_.warmup_steps,
                                                   .start_warmup_step = config_.start_warmup_step,
                                                   .power = config_.poly_power},
                               step - 1);
  // The reference sets the rate at the start of each epoch (epochs count from 1).
  const int64_t epoch = (step - 1) / config_.steps_per_epoch + 1;
  return optim::LearningRate(
      optim::UnetSchedule{.lr = config_.base_lr,
                          .init_lr = config_.unet_init_lr,
                          .warmup_epochs = static_cast<int64_t>(config_.warmup_epochs),
                          .decay_epochs = config_.unet_decay_epochs,
                          .decay_factor = config_.unet_decay_factor},
      epoch);
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
  if (config_.optimizer == OptimizerKind::kSgd) loss += static_cast<float>(L2LossFromDevice());
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
  loss += static_cast<float>(UpdateParameters());
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

double Trainer::UpdateParameters() {
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
  double l2_loss = 0.0;
  if (config_.optimizer == OptimizerKind::kSgd) {
    // SGD: loss += wd * sum(w^2) over non-BN variables, so g += 2 wd w. The
    // parameters are equal on every rank, so adding it after the average is
    // the same as each replica adding it before.
    const float wd = static_cast<float>(config_.weight_decay);
    if (on_device()) {
      QueueL2Gradient(wd);
    } else {
      l2_loss = AddL2Gradient(wd);
    }
  }
  ApplyOptimizer(found_inf);
  if (config_.dynamic_loss_scaling)
    ops::UpdateLossScale(device, config_.loss_scale_params, loss_scale_.f32(),
                         growth_tracker_.as<int32_t>(), found_inf);
  return l2_loss;
}

void Trainer::ApplyOptimizer(const float* found_inf) {
  const core::Device device = model_.device();
  float* w = model_.parameters().data();
  const float* g = model_.gradients().data();
  const float lr = static_cast<float>(learning_rate());
  // On a device the rate is read where TrainStep wrote it.
  const float* lr_at = on_device() ? lr_.f32() : nullptr;
  const float momentum = static_cast<float>(config_.momentum);
  if (config_.optimizer == OptimizerKind::kNesterov) {
    // Weight decay on every tensor, as torch.optim.SGD's (the U-Net reference's is 0).
    ops::SgdStep(device,
                 {.lr = lr,
                  .lr_at = lr_at,
                  .momentum = momentum,
                  .weight_decay = static_cast<float>(config_.weight_decay),
                  .nesterov = true},
                 decayed_slices_, w, g, momentum_.data(), found_inf);
  } else if (config_.optimizer == OptimizerKind::kLamb) {
    // LAMB's skip list (LayerNorm, bias) is the LARS one: model.slices().
    ops::LambStep(device,
                  {.lr = lr,
                   .lr_at = lr_at,
                   .beta1 = static_cast<float>(config_.lamb_beta1),
                   .beta2 = static_cast<float>(config_.lamb_beta2),
                   .epsilon = static_cast<float>(config_.lamb_epsilon),
                   .weight_decay = static_cast<float>(config_.weight_decay),
                   .max_grad_norm = static_cast<float>(config_.max_grad_norm)},
                  lars_slices_, w, g, momentum_.data(), second_moment_.data(),
                  lamb_step_.as<int32_t>(), found_inf);
  } else if (config_.optimizer == OptimizerKind::kLars) {
    ops::LarsStep(device,
                  {.lr = lr,
                   .lr_at = lr_at,
                   .momentum = momentum,
                   .weight_decay = static_cast<float>(config_.weight_decay),
                   .eeta = static_cast<float>(config_.lars_eta)},
                  lars_slices_, w, g, momentum_.data(), found_inf);
  } else {
    // tf.keras SGD momentum: v = m v - lr g; w += v, which is LarsStep on
    // excluded slices (the L2 term is already in g).
    ops::LarsStep(device, {.lr = lr, .lr_at = lr_at, .momentum = momentum, .weight_decay = 0.0f},
                  sgd_slices_, w, g, momentum_.data(), found_inf);
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

double Trainer::GlobalMetric(models::MetricSums local) {
  // fp32 sums: counts up to 2^24 are exact (ImageNet val is 50,000 images).
  float sums[2] = {static_cast<float>(local.numerator), static_cast<float>(local.denominator)};
  if (!on_device()) {
    comm_.AllReduceSum(sums, 2);
  } else if (comm_.world_size() > 1) {
    // NCCL reduces device buffers.
    const core::Device device = model_.device();
    float* d = reduce_scratch_.f32();
    ops::CopyBytes(d, device, sums, core::Device::kCpu, sizeof(sums));
    DeviceAllReduce(d, 2, /*average=*/false);
    ops::CopyBytes(sums, core::Device::kCpu, d, device, sizeof(sums));
  }
  return sums[1] > 0.0f ? static_cast<double>(sums[0]) / sums[1] : 0.0;
}

Trainer::HostState Trainer::Snapshot() const {
  HostState state{.params = model_.ParametersToHost(),
                  .buffers = model_.BuffersToHost(),
                  .momentum = MomentumToHost(),
                  .second_moment = SecondMomentToHost(),
                  .step = step_,
                  .num_batches_tracked = model_.num_batches_tracked()};
  if (lamb_step_.numel() > 0)
    ops::CopyBytes(&state.lamb_step, core::Device::kCpu, lamb_step_.data(), model_.device(),
                   sizeof(int32_t));
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
  ops::CopyBytes(momentum_.data(), model_.device(), state.momentum.data(), core::Device::kCpu,
                 momentum_.size_bytes());
  ops::CopyBytes(second_moment_.data(), model_.device(), state.second_moment.data(),
                 core::Device::kCpu, second_moment_.size_bytes());
  if (lamb_step_.numel() > 0)
    ops::CopyBytes(lamb_step_.data(), model_.device(), &state.lamb_step, core::Device::kCpu,
                   sizeof(int32_t));
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

std::vector<io::NamedTensor> Trainer::CheckpointTensors(HostState& state) const {
  std::vector<io::NamedTensor> named = model_.NamedHostTensors(state.params, state.buffers);
  const int64_t n = static_cast<int64_t>(state.momentum.size());
  named.push_back(
      {"trainer.momentum", core::Tensor(state.momentum.data(), {n}, core::DType::kF32)});
  if (!state.second_moment.empty()) {
    const int64_t v = static_cast<int64_t>(state.second_moment.size());
    named.push_back({"trainer.second_moment",
                     core::Tensor(state.second_moment.data(), {v}, core::DType::kF32)});
    named.push_back(
        {"trainer.lamb_step", core::Tensor(&state.lamb_step, core::Shape(), core::DType::kI32)});
  }
  if (config_.dynamic_loss_scaling) {
    named.push_back(
        {"trainer.loss_scale", core::Tensor(&state.loss_scale, core::Shape(), core::DType::kF32)});
    named.push_back({"trainer.loss_scale_growth_tracker",
                     core::Tensor(&state.growth_tracker, core::Shape(), core::DType::kI32)});
  }
  named.push_back({"trainer.step", core::Tensor(&state.step, core::Shape(), core::DType::kI64)});
  named.push_back({"trainer.num_batches_tracked",
                   core::Tensor(&state.num_batches_tracked, core::Shape(), core::DType::kI64)});
  return named;
}

absl::Status Trainer::SaveCheckpoint(const std::string& path) const {
  HostState state = Snapshot();
  return io::SaveSafetensors(path, CheckpointTensors(state));
}

absl::Status Trainer::LoadCheckpoint(const std::string& path) {
  // Everything lands in host copies first: a failed load changes nothing.
  HostState state = Snapshot();
  if (absl::StatusOr<io::Metadata> read = io::LoadSafetensors(path, CheckpointTensors(state));
      !read.ok())
    return read.status();
  Restore(state);
  return absl::OkStatus();
}

}  // namespace mlperf::train
