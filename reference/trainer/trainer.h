// The data-parallel trainer every model uses: one optimizer step over one or
// more micro-batches (gradient accumulation), the gradients of the
// replicated parameters averaged over the ranks in buckets, the optimizer
// and learning-rate schedule a benchmark chose (reference/optim), dynamic
// loss scaling for fp16, the untimed warm-up on synthetic data that restores
// everything bit for bit, and checkpoints. It knows no benchmark: what a
// recipe decides comes in the optimizer, the schedule and the parameters'
// properties (frozen parameters are not its business at all; sharded ones
// are never all-reduced and are gathered whole into checkpoints).
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

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "reference/core/arena.h"
#include "reference/dist/communicator.h"
#include "reference/io/safetensors.h"
#include "reference/kernels/device_graph.h"
#include "reference/kernels/device_runtime.h"
#include "reference/kernels/optimizer_params.h"
#include "reference/models/model.h"
#include "reference/optim/optimizer.h"
#include "reference/optim/schedules.h"

namespace mlperf::train {

struct TrainerConfig {
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
  // CapturableStep, one micro-batch, collectives that stay on the device.
  // Otherwise, and on the CPU, steps run as they are queued.
  bool cuda_graph = false;
};

class Trainer {
 public:
  // comm_stream: for a device model, the stream the communicator queues its
  // collectives on (NcclOptions::stream; null = the legacy default stream).
  // Ignored on the CPU.
  Trainer(models::Model& model, std::unique_ptr<optim::Optimizer> optimizer,
          std::unique_ptr<optim::LearningRateSchedule> schedule, const TrainerConfig& config,
          dist::Communicator& comm, ops::Stream comm_stream = {});
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // One optimizer step: forward and backward of each micro-batch
  // (gradient_accumulation_steps of them), the average of their gradients
  // over micro-batches and ranks, the optimizer, step++. Returns the loss
  // averaged likewise, plus the optimizer's loss term (an L2 term some
  // references report in the loss).
  float TrainStep(std::span<const models::Batch> micro_batches);
  float TrainStep(const models::Batch& batch) { return TrainStep(std::span(&batch, 1)); }
  // TrainStep without the loss: on a device the step is queued and the host
  // returns without waiting for it, free to stage the next batch while the
  // device trains (the one read-back of a step is its loss).
  void QueueStep(std::span<const models::Batch> micro_batches);

  // Step n (n = step() + 1 while it runs) uses the schedule's rate At(n).
  double learning_rate() const { return LearningRateAt(step_ + 1); }
  double LearningRateAt(int64_t step) const { return schedule_->At(step); }
  int64_t step() const { return step_; }
  optim::Optimizer& optimizer() { return *optimizer_; }
  // A float per-element state tensor of the optimizer ("momentum", ...),
  // copied to the host on any device; empty when it has none of that name.
  std::vector<float> OptimizerStateToHost(const std::string& name) const;
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

  // Model tensors (state_dict names; sharded ones gathered whole), the
  // optimizer state per parameter ("trainer.<state>.<parameter>") and the
  // step in one safetensors file, written by rank 0; the file does not
  // depend on how many ranks wrote it. Loading restores all of it or
  // nothing. Both are collective with sharded parameters.
  absl::Status SaveCheckpoint(const std::string& path) const;
  absl::Status LoadCheckpoint(const std::string& path);

 private:
  // Everything a step changes, on the host: what the warm-up restores and a
  // checkpoint holds.
  struct HostState {
    std::vector<float> params, buffers;
    std::vector<std::vector<std::byte>> optimizer;  // one per optimizer State() tensor
    int64_t step = 0, num_batches_tracked = 0;
    float loss_scale = 1.0f;
    int32_t growth_tracker = 0;
  };
  // The named tensors of a checkpoint over a HostState; the sharded ones in
  // full-size copies (`gathered`) whose own rows map back to the state.
  struct Gathered {
    std::vector<float> full;
    core::Tensor local;  // this rank's rows, inside the HostState
    int64_t first_row = 0;
  };
  struct CheckpointView {
    std::vector<io::NamedTensor> named;
    std::vector<std::unique_ptr<Gathered>> gathered;
  };
  HostState Snapshot() const;
  void Restore(const HostState& state);
  // With `gather` the sharded tensors are gathered from every rank
  // (collective); without, their full copies are left for a load to fill.
  CheckpointView MakeCheckpointView(HostState& state, bool gather) const;
  // Sums host floats over the ranks (through device memory on a device).
  void AllReduceHostSum(std::span<float> values) const;

  bool on_device() const { return model_.device() != core::Device::kCpu; }
  // Queues the all-reduce of every bucket whose gradients are final (begin
  // >= ready_from) and not yet sent, after the work queued so far.
  void LaunchReadyBuckets(int64_t ready_from);
  // In-place all-reduce of device floats, ordered after the compute stream's
  // queued work and before its later work.
  void DeviceAllReduce(float* data, int64_t count, bool average) const;
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
  // After the all-reduce: unscaling (fp16), the optimizer and the loss
  // scale's update.
  void UpdateParameters();
  // The FP8 layers' scales after a step, from the amaxes of every rank.
  void UpdateFp8Scaling();

  models::Model& model_;
  std::unique_ptr<optim::Optimizer> optimizer_;
  std::unique_ptr<optim::LearningRateSchedule> schedule_;
  TrainerConfig config_;
  dist::Communicator& comm_;
  std::vector<dist::Bucket> buckets_;
  // The optimizer state, accumulation sums and device scratch in an arena
  // on the model's device.
  std::optional<core::Arena> state_;
  std::vector<optim::StateTensor> optimizer_state_;
  // Dynamic loss scaling only: the scale, clean steps since the last change
  // (int32) and the skip flag of the step.
  core::Tensor loss_scale_, growth_tracker_, found_inf_;
  core::Tensor grad_sum_, loss_sum_;
  core::Tensor lr_;  // the step's rate on the device
  // This rank's FP8 amaxes (3 a layer) and every rank's, gathered.
  core::Tensor fp8_amax_, fp8_gathered_;
  ops::Stream comm_stream_;
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
