// The closed-division training recipe of the ResNet reference
// (references.md 2.2, 2.4): label-smoothed cross-entropy, LARS or SGD with
// momentum, polynomial decay with linear warm-up, gradients averaged over the
// data-parallel ranks in buckets.
//
// The trainer runs where the model lives. On the CPU the communicator works
// on host buffers (MPI) after the backward pass. On a GPU it works on device
// buffers (NCCL): each bucket's all-reduce is queued on the communicator's
// stream as soon as Backward reports its gradients final, so communication
// overlaps the rest of the backward pass; the optimizer then waits for it on
// the device, and the host reads back only the loss.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "reference/core/arena.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/optimizer_params.h"
#include "reference/models/resnet.h"
#include "reference/optim/schedules.h"

namespace mlperf::models {

enum class OptimizerKind { kLars, kSgd };

// Closed-division hyperparameters (references.md 2.4 / 2.5).
struct ResNetRecipe {
  OptimizerKind optimizer = OptimizerKind::kLars;
  int64_t global_batch_size = 256;
  double base_lr = 10.0, end_lr = 1e-4, poly_power = 2.0;
  double warmup_epochs = 5;
  int64_t train_epochs = 41;  // decay horizon
  double momentum = 0.9, weight_decay = 1e-4, label_smoothing = 0.1;
  double lars_eta = 0.001;      // lars_epsilon is logged as 0.0 (1e-7 in effect, as the reference)
  int64_t steps_per_epoch = 0;  // floor(train images / global batch)
  // Gradient all-reduce bucket size in floats (not a hyperparameter).
  int64_t bucket_elements = int64_t{1} << 20;
};

// warmup_steps = warmup_epochs * steps_per_epoch (rounded down),
// train_steps = train_epochs * steps_per_epoch.
optim::PolyWarmupSchedule MakeSchedule(const ResNetRecipe& recipe);

class ResNetTrainer {
 public:
  // comm_stream: for a device model, the cudaStream_t the communicator queues
  // its collectives on (NcclOptions::stream; nullptr = the legacy default
  // stream). Ignored on the CPU.
  ResNetTrainer(ResNet& model, const ResNetRecipe& recipe, dist::Communicator& comm,
                void* comm_stream = nullptr);
  ~ResNetTrainer();

  // Forward, backward, bucketed all-reduce average, optimizer, step++.
  // Returns the loss averaged over ranks (with SGD including the L2 term, as
  // the reference's reported loss).
  float TrainStep(const float* images, const int32_t* labels);

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

  // Warm-up before run_start: `steps` steps on synthetic data, then restores
  // parameters, BN buffers, num_batches_tracked, optimizer state and the step
  // counter bit for bit. Every rank must call it with the same `steps`.
  void WarmUp(int steps);

  // Sums correct and total over ranks once every local eval batch has gone
  // through model.EvaluateBatch; returns correct / total.
  double GlobalAccuracy(int64_t local_correct, int64_t local_total);

 private:
  bool on_device() const { return model_.device() != core::Device::kCpu; }
  // Queues the all-reduce of every bucket whose gradients are final (begin
  // >= ready_from) and not yet sent, after the work queued so far.
  void LaunchReadyBuckets(int64_t ready_from);
  // In-place all-reduce of device floats, ordered after the compute stream's
  // queued work and before its later work.
  void DeviceAllReduce(float* data, int64_t count, bool average);
  // SGD's L2 term: g += 2 wd w on the l2 slices; returns wd * sum(w^2).
  double AddL2Gradient(float wd);

  ResNet& model_;
  ResNetRecipe recipe_;
  dist::Communicator& comm_;
  optim::PolyWarmupSchedule schedule_;
  std::vector<dist::Bucket> buckets_;
  std::vector<TensorSlice> lars_slices_;  // the LARS skip list
  // SGD: every slice excluded (plain TF momentum); l2_slices_ are the
  // non-BN variables whose wd * sum(w^2) the reference adds to the loss.
  std::vector<TensorSlice> sgd_slices_, l2_slices_;
  // Momentum (and device scratch) in an arena on the model's device.
  std::optional<core::Arena> state_;
  std::span<float> momentum_;
  core::Tensor l2_scratch_, l2_sums_, reduce_scratch_;
  void* comm_stream_ = nullptr;
  size_t next_bucket_ = 0;  // buckets_[0, next_bucket_) were sent this step
  int64_t step_ = 0;
};

}  // namespace mlperf::models
