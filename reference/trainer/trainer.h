// The data-parallel trainer every model uses: one optimizer step over one or
// more micro-batches (gradient accumulation), gradients averaged over the
// ranks in buckets, LARS or SGD with momentum under a polynomial schedule
// with linear warm-up (ResNet), Nesterov SGD under per-epoch warm-up and step
// decay (3D U-Net), LAMB under BERT's warm-up and linear decay, the untimed warm-up on synthetic
// data that restores everything bit for bit, the global evaluation metric and checkpoints.
//
// The trainer runs where the model lives. On the CPU the communicator works
// on host buffers (MPI) after the backward pass. On a GPU it works on device
// buffers (NCCL): each bucket's all-reduce is queued on the communicator's
// stream as soon as Backward reports its gradients final, so communication
// overlaps the rest of the backward pass; the optimizer then waits for it on
// the device, and the host reads back only the loss, once, at the step's end.
// The step's learning rate is written to the device before the step, so with
// cuda_graph a step is recorded once (ops::DeviceGraph) and replayed.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "reference/core/arena.h"
#include "reference/dist/communicator.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/device_graph.h"
#include "reference/kernels/optimizer_params.h"
#include "reference/models/model.h"
#include "reference/optim/schedules.h"

namespace mlperf::train {

// kSgd: tf.keras SGD with momentum and an L2 loss term (ResNet reference);
// kNesterov: torch.optim.SGD(nesterov=True) with its weight decay (3D U-Net);
// kLamb: the BERT reference's LAMB after global-norm clipping.
enum class OptimizerKind { kLars, kSgd, kNesterov, kLamb };
// kPolyWarmup: per-step linear warm-up then polynomial decay (ResNet);
// kUnetEpochs: the 3D U-Net reference's per-epoch warm-up from
// unet_init_lr, then multi-step decay (optim::UnetSchedule); kBert: per-step
// warm-up from start_warmup_step, then linear decay to 0 over train_steps
// (optim::BertSchedule; steps count from 0 there, as TensorFlow's global_step).
enum class ScheduleKind { kPolyWarmup, kUnetEpochs, kBert };

struct TrainerConfig {
  OptimizerKind optimizer = OptimizerKind::kLars;
  int64_t global_batch_size = 256;
  double base_lr = 10.0, end_lr = 1e-4, poly_power = 2.0;
  double warmup_epochs = 5;
  int64_t train_epochs = 41;  // decay horizon
  double momentum = 0.9, weight_decay = 1e-4;
  double lars_eta = 0.001;  // lars_epsilon is logged as 0.0 (1e-7 in effect, as the reference)
  ScheduleKind schedule = ScheduleKind::kPolyWarmup;
  double unet_init_lr = 1e-4;              // kUnetEpochs: warm-up start
  std::vector<int64_t> unet_decay_epochs;  // kUnetEpochs: MultiStepLR milestones
  double unet_decay_factor = 1.0;          // kUnetEpochs: gamma
  int64_t steps_per_epoch = 0;             // optimizer steps: floor(train samples / global batch)
  // kLamb and kBert (BERT counts steps, not epochs).
  double lamb_beta1 = 0.9, lamb_beta2 = 0.999, lamb_epsilon = 1e-6;
  double max_grad_norm = 1.0;  // clip_by_global_norm before LAMB (0: none)
  int64_t train_steps = 0, warmup_steps = 0, start_warmup_step = 0;
  // Micro-batches per optimizer step; their gradients are averaged.
  int gradient_accumulation_steps = 1;
  // Dynamic loss scaling (fp16): Backward multiplies the loss gradient by a
  // scale kept on the device; after the all-reduce the gradients are
  // unscaled and checked, and a step with an Inf or NaN is skipped (the
  // schedule still advances) while the scale backs off. All on the device.
  bool dynamic_loss_scaling = false;
  float initial_loss_scale = 65536.0f;  // 2^16, PyTorch GradScaler's
  LossScaleParams loss_scale_params;
  // Gradient all-reduce bucket size in floats (not a hyperparameter).
  int64_t bucket_elements = int64_t{1} << 20;
  // Record the step once as a CUDA graph and replay it (one launch instead
  // of one per kernel), where it can be recorded: a device model with a
  // CapturableStep (all three), one micro-batch, collectives that stay on
  // the device. Otherwise, and on the CPU, steps run as they are queued.
  bool cuda_graph = false;
};

// warmup_steps = warmup_epochs * steps_per_epoch (rounded down),
// train_steps = train_epochs * steps_per_epoch.
optim::PolyWarmupSchedule MakeSchedule(const TrainerConfig& config);

class Trainer {
 public:
  // comm_stream: for a device model, the cudaStream_t the communicator queues
  // its collectives on (NcclOptions::stream; nullptr = the legacy default
  // stream). Ignored on the CPU.
  Trainer(models::Model& model, const TrainerConfig& config, dist::Communicator& comm,
          void* comm_stream = nullptr);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One optimizer step: forward and backward of each micro-batch
  // (gradient_accumulation_steps of them), the average of their gradients
  // over micro-batches and ranks, the optimizer, step++. Returns the loss
  // averaged likewise (with SGD including the L2 term, as the ResNet
  // reference reports it).
  float TrainStep(std::span<const models::Batch> micro_batches);
  float TrainStep(const models::Batch& batch) { return TrainStep(std::span(&batch, 1)); }
  // TrainStep without the loss: on a device the step is queued and the host
  // returns without waiting for it, free to stage the next batch while the
  // device trains (the one read-back of a step is its loss).
  void QueueStep(std::span<const models::Batch> micro_batches);

  // Steps count from 1: step n (n = step() + 1 while it runs) uses
  // LearningRate(schedule, n), so the first step does not get a zero rate and
  // the warm-up reaches base_lr on step warmup_steps.
  double learning_rate() const { return LearningRateAt(step_ + 1); }
  double LearningRateAt(int64_t step) const;
  int64_t step() const { return step_; }
  const optim::PolyWarmupSchedule& schedule() const { return schedule_; }
  // Optimizer state (TF-style momentum, learning rate folded in), same layout
  // and device as model.parameters(); MomentumToHost copies it on any device.
  std::span<float> momentum() { return momentum_; }
  std::vector<float> MomentumToHost() const;
  // LAMB's second moment (empty for the other optimizers).
  std::vector<float> SecondMomentToHost() const;
  // Dynamic loss scaling's scale and whether the last step was skipped
  // (host reads, for tests and reports; 1 and false without scaling).
  float LossScaleToHost() const;
  bool LastStepSkipped() const;
  // Steps that replayed a recording (cuda_graph), for tests and benchmarks.
  int64_t replayed_steps() const { return replayed_steps_; }

  // Warm-up before run_start: `steps` steps on the model's synthetic batch,
  // then restores parameters, buffers, num_batches_tracked, optimizer state
  // and the step counter bit for bit. Every rank must call it with the same
  // `steps`.
  void WarmUp(int steps);

  // The metric over every rank once each local evaluation batch has gone
  // through model.EvaluateBatch: sum of numerators / sum of denominators.
  double GlobalMetric(models::MetricSums local);

  // Model tensors (state_dict names), optimizer state and step in one
  // safetensors file; loading restores all of them or nothing.
  absl::Status SaveCheckpoint(const std::string& path) const;
  absl::Status LoadCheckpoint(const std::string& path);

 private:
  // Everything a step changes, on the host: what the warm-up restores and a
  // checkpoint holds.
  struct HostState {
    std::vector<float> params, buffers, momentum, second_moment;
    int64_t step = 0, num_batches_tracked = 0;
    int32_t lamb_step = 0;  // LAMB's bias-correction step
    float loss_scale = 1.0f;
    int32_t growth_tracker = 0;
  };
  HostState Snapshot() const;
  void Restore(const HostState& state);
  // `state` as named tensors (model names, then the trainer's own).
  std::vector<io::NamedTensor> CheckpointTensors(HostState& state) const;

  bool on_device() const { return model_.device() != core::Device::kCpu; }
  // Queues the all-reduce of every bucket whose gradients are final (begin
  // >= ready_from) and not yet sent, after the work queued so far.
  void LaunchReadyBuckets(int64_t ready_from);
  // In-place all-reduce of device floats, ordered after the compute stream's
  // queued work and before its later work.
  void DeviceAllReduce(float* data, int64_t count, bool average);
  // Forward and backward of each micro-batch; leaves their mean gradient in
  // the model and their mean loss (device) in loss_sum_ or returns it (host).
  float AccumulateGradients(std::span<const models::Batch> micro_batches);
  // The step on the CPU; returns its loss.
  float HostStep(std::span<const models::Batch> micro_batches);
  // The step on a device, queued with no read-back (what a recording holds).
  void QueueDeviceStep(std::span<const models::Batch> micro_batches);
  // The device step replayed from a recording, recorded first when the
  // previous step ran as queued and no device memory moved since.
  void RecordedDeviceStep(const models::Batch& batch);
  // After the all-reduce: unscaling (fp16), SGD's L2 term, the optimizer and
  // the loss scale's update. Returns the L2 loss on the CPU (a device step
  // reads it afterwards, L2LossFromDevice).
  double UpdateParameters();
  // SGD's L2 term: g += 2 wd w on the l2 slices; returns wd * sum(w^2).
  double AddL2Gradient(float wd);
  // The same on a device, leaving each slice's sum(w^2) in l2_sums_.
  void QueueL2Gradient(float wd);
  double L2LossFromDevice() const;
  // found_inf: the skip flag on the device, or null.
  void ApplyOptimizer(const float* found_inf);

  models::Model& model_;
  TrainerConfig config_;
  dist::Communicator& comm_;
  optim::PolyWarmupSchedule schedule_;
  std::vector<dist::Bucket> buckets_;
  std::vector<TensorSlice> lars_slices_;  // the LARS skip list
  // SGD: every slice excluded (plain TF momentum); l2_slices_ are the
  // variables outside batch norms whose wd * sum(w^2) the ResNet reference
  // adds to the loss.
  std::vector<TensorSlice> sgd_slices_, l2_slices_;
  std::vector<TensorSlice> decayed_slices_;  // every tensor, weight decay on all (kNesterov)
  // Momentum, gradient-accumulation sums and device scratch in an arena on
  // the model's device.
  std::optional<core::Arena> state_;
  std::span<float> momentum_;
  std::span<float> second_moment_;  // LAMB only
  core::Tensor lamb_step_;          // int32, LAMB only
  // Dynamic loss scaling only: the scale, clean steps since the last change
  // (int32) and the skip flag of the step.
  core::Tensor loss_scale_, growth_tracker_, found_inf_;
  core::Tensor grad_sum_, loss_sum_, l2_scratch_, l2_sums_, reduce_scratch_;
  core::Tensor lr_;  // the step's rate on the device
  void* comm_stream_ = nullptr;
  size_t next_bucket_ = 0;  // buckets_[0, next_bucket_) were sent this step
  int64_t step_ = 0;
  // cuda_graph: whether steps are recorded, the recording, and the resource
  // generation and precision of the last step that ran as queued (a
  // recording made at the same ones allocates and uploads nothing).
  bool record_steps_ = false;
  ops::DeviceGraph graph_;
  std::optional<uint64_t> settled_at_;
  core::DType settled_precision_ = core::DType::kF32;
  int64_t replayed_steps_ = 0;
};

}  // namespace mlperf::train
