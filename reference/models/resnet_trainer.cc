#include "reference/models/resnet_trainer.h"

#include <algorithm>
#include <cmath>

#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::models {

optim::PolyWarmupSchedule MakeSchedule(const ResNetRecipe& recipe) {
  return {.base_lr = recipe.base_lr,
          .end_lr = recipe.end_lr,
          .warmup_steps = static_cast<int64_t>(recipe.warmup_epochs *
                                               static_cast<double>(recipe.steps_per_epoch)),
          .train_steps = recipe.train_epochs * recipe.steps_per_epoch,
          .power = recipe.poly_power};
}

ResNetTrainer::ResNetTrainer(ResNet& model, const ResNetRecipe& recipe, dist::Communicator& comm,
                             void* comm_stream)
    : model_(model),
      recipe_(recipe),
      comm_(comm),
      schedule_(MakeSchedule(recipe)),
      comm_stream_(comm_stream) {
  MLPERF_CHECK(recipe.steps_per_epoch > 0);
  buckets_ =
      dist::PlanBuckets(static_cast<int64_t>(model.gradients().size()), recipe.bucket_elements);
  lars_slices_ = model.slices();
  for (size_t i = 0; i < lars_slices_.size(); ++i) {
    TensorSlice s = lars_slices_[i];
    s.excluded = true;
    sgd_slices_.push_back(s);
    // resnet_runnable.py: l2 over variables without 'batch_normalization' in
    // the name, so the FC bias is included (it is not in the LARS skip sense).
    if (!model.parameter_tensors()[i].batch_norm) l2_slices_.push_back(s);
  }
  // Momentum, plus on a device the scratch of the SGD L2 term and of scalar
  // reductions, in one arena next to the model.
  const int64_t count = static_cast<int64_t>(model.parameters().size());
  int64_t largest_l2 = 1;
  for (const TensorSlice& s : l2_slices_) largest_l2 = std::max(largest_l2, s.numel);
  const auto carve = [&](core::Arena& arena) {
    const core::Tensor m = arena.AllocateZeroed({count});
    l2_scratch_ = arena.Allocate({largest_l2});
    l2_sums_ = arena.Allocate({std::max<int64_t>(1, static_cast<int64_t>(l2_slices_.size()))});
    reduce_scratch_ = arena.Allocate({4});
    return m;
  };
  core::Arena measuring = core::Arena::Measuring(model.device());
  carve(measuring);
  state_.emplace(model.device(), measuring.used());
  const core::Tensor m = carve(*state_);
  momentum_ = {m.f32(), static_cast<size_t>(count)};
  if (on_device() && comm_.world_size() > 1)
    model_.set_gradients_ready_hook([this](int64_t ready_from) { LaunchReadyBuckets(ready_from); });
}

ResNetTrainer::~ResNetTrainer() { model_.set_gradients_ready_hook(nullptr); }

std::vector<float> ResNetTrainer::MomentumToHost() const {
  std::vector<float> host(momentum_.size());
  ops::CopyBytes(host.data(), core::Device::kCpu, momentum_.data(), model_.device(),
                 momentum_.size_bytes());
  return host;
}

void ResNetTrainer::LaunchReadyBuckets(int64_t ready_from) {
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

void ResNetTrainer::DeviceAllReduce(float* data, int64_t count, bool average) {
  ops::StreamWaitsFor(comm_stream_, ops::ComputeStream());
  if (average) {
    comm_.AllReduceAverage(data, count);
  } else {
    comm_.AllReduceSum(data, count);
  }
  ops::StreamWaitsFor(ops::ComputeStream(), comm_stream_);
}

double ResNetTrainer::AddL2Gradient(float wd) {
  float* w = model_.parameters().data();
  float* g = model_.gradients().data();
  if (!on_device()) {
    double sum_sq = 0.0;
    for (const TensorSlice& s : l2_slices_)
      for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
        sum_sq += static_cast<double>(w[i]) * w[i];
        g[i] += 2.0f * wd * w[i];
      }
    return wd * sum_sq;
  }
  // The same with device ops: per slice a dot product w.w (a 1x1 GEMM) into
  // l2_sums_, and g += (2 wd) w through the scratch copy. One read-back.
  const core::Device device = model_.device();
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
  std::vector<float> sums(l2_slices_.size());
  ops::CopyBytes(sums.data(), core::Device::kCpu, l2_sums_.data(), device,
                 sums.size() * sizeof(float));
  double sum_sq = 0.0;
  for (float v : sums) sum_sq += v;
  return wd * sum_sq;
}

double ResNetTrainer::LearningRateAt(int64_t step) const {
  return optim::LearningRate(schedule_, step);
}

float ResNetTrainer::TrainStep(const float* images, const int32_t* labels) {
  const core::Device device = model_.device();
  const float smoothing = static_cast<float>(recipe_.label_smoothing);
  float loss = 0.0f;
  float* w = model_.parameters().data();
  float* g = model_.gradients().data();
  if (!on_device()) {
    loss = model_.ForwardTrain(images, labels, smoothing);
    model_.Backward();
    dist::AllReduceGradients(comm_, g, buckets_);
  } else {
    model_.ForwardTrainAsync(images, labels, smoothing);
    next_bucket_ = 0;
    model_.Backward();  // the hook sends the buckets as they complete
    if (comm_.world_size() > 1) {
      LaunchReadyBuckets(0);
      MLPERF_CHECK(next_bucket_ == buckets_.size());
      // The loss joins the collectives; the optimizer waits for all of them.
      DeviceAllReduce(model_.loss_tensor().f32(), 1, /*average=*/true);
    }
    ops::CopyBytes(&loss, core::Device::kCpu, model_.loss_tensor().data(), device, sizeof(float));
  }
  const float lr = static_cast<float>(learning_rate());
  const float momentum = static_cast<float>(recipe_.momentum);
  if (recipe_.optimizer == OptimizerKind::kLars) {
    ops::LarsStep(device,
                  {.lr = lr,
                   .momentum = momentum,
                   .weight_decay = static_cast<float>(recipe_.weight_decay),
                   .eeta = static_cast<float>(recipe_.lars_eta)},
                  lars_slices_, w, g, momentum_.data(), nullptr);
  } else {
    // SGD: loss += wd * sum(w^2) over non-BN variables, so g += 2 wd w. The
    // parameters are equal on every rank, so adding it after the average is
    // the same as each replica adding it before. Then tf.keras SGD momentum:
    // v = m v - lr g; w += v, which is LarsStep on excluded slices.
    const float wd = static_cast<float>(recipe_.weight_decay);
    loss += static_cast<float>(AddL2Gradient(wd));
    ops::LarsStep(device, {.lr = lr, .momentum = momentum, .weight_decay = 0.0f}, sgd_slices_, w, g,
                  momentum_.data(), nullptr);
  }
  ++step_;
  // On a device the loss was averaged with the gradients.
  if (!on_device()) comm_.AllReduceAverage(&loss, 1);
  return loss;
}

void ResNetTrainer::WarmUp(int steps) {
  if (steps <= 0) return;
  // Host copies on every device: this runs once, before run_start.
  const std::vector<float> saved_params = model_.ParametersToHost();
  const std::vector<float> saved_buffers = model_.BuffersToHost();
  const std::vector<float> saved_momentum = MomentumToHost();
  const int64_t saved_step = step_, saved_tracked = model_.num_batches_tracked();

  // Synthetic batch (the reference's --use_synthetic_data): mean-subtracted
  // pixel range, labels spread over the classes.
  const int64_t batch = model_.batch_size();
  std::vector<float> images(static_cast<size_t>(batch * model_.image_elements()));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (size_t i = 0; i < images.size(); ++i)
    images[i] = 255.0f * core::PhiloxUniform(/*seed=*/0x5eed, 0, i) - 128.0f;
  for (size_t i = 0; i < labels.size(); ++i)
    labels[i] = static_cast<int32_t>(core::PhiloxBits(0x5eed, 1, i) %
                                     static_cast<uint32_t>(model_.config().num_classes));
  for (int s = 0; s < steps; ++s) TrainStep(images.data(), labels.data());

  model_.ParametersFromHost(saved_params);
  model_.BuffersFromHost(saved_buffers);
  ops::CopyBytes(momentum_.data(), model_.device(), saved_momentum.data(), core::Device::kCpu,
                 momentum_.size_bytes());
  ops::Synchronize(model_.device());
  step_ = saved_step;
  model_.set_num_batches_tracked(saved_tracked);
}

double ResNetTrainer::GlobalAccuracy(int64_t local_correct, int64_t local_total) {
  // Counts up to 2^24 are exact in fp32 (ImageNet val is 50,000 images).
  float counts[2] = {static_cast<float>(local_correct), static_cast<float>(local_total)};
  if (!on_device()) {
    comm_.AllReduceSum(counts, 2);
  } else if (comm_.world_size() > 1) {
    // NCCL reduces device buffers.
    const core::Device device = model_.device();
    float* d = reduce_scratch_.f32();
    ops::CopyBytes(d, device, counts, core::Device::kCpu, sizeof(counts));
    DeviceAllReduce(d, 2, /*average=*/false);
    ops::CopyBytes(counts, core::Device::kCpu, d, device, sizeof(counts));
  }
  return counts[1] > 0.0f ? static_cast<double>(counts[0]) / counts[1] : 0.0;
}

}  // namespace mlperf::models
