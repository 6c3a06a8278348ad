#include "reference/models/resnet_trainer.h"

#include <cmath>

#include "reference/core/philox.h"
#include "reference/kernels/cpu/optimizer.h"

namespace mlperf::models {

optim::PolyWarmupSchedule MakeSchedule(const ResNetRecipe& recipe) {
  return {.base_lr = recipe.base_lr,
          .end_lr = recipe.end_lr,
          .warmup_steps =
              static_cast<int64_t>(recipe.warmup_epochs * static_cast<double>(recipe.steps_per_epoch)),
          .train_steps = recipe.train_epochs * recipe.steps_per_epoch,
          .power = recipe.poly_power};
}

ResNetTrainer::ResNetTrainer(ResNet& model, const ResNetRecipe& recipe, dist::Communicator& comm)
    : model_(model), recipe_(recipe), comm_(comm), schedule_(MakeSchedule(recipe)) {
  MLPERF_CHECK(recipe.steps_per_epoch > 0);
  buckets_ = dist::PlanBuckets(static_cast<int64_t>(model.gradients().size()),
                               recipe.bucket_elements);
  lars_slices_ = model.slices();
  for (size_t i = 0; i < lars_slices_.size(); ++i) {
    TensorSlice s = lars_slices_[i];
    s.excluded = true;
    sgd_slices_.push_back(s);
    // resnet_runnable.py: l2 over variables without 'batch_normalization' in
    // the name, so the FC bias is included (it is not in the LARS skip sense).
    if (!model.parameter_tensors()[i].batch_norm) l2_slices_.push_back(s);
  }
  momentum_.assign(model.parameters().size(), 0.0f);
}

double ResNetTrainer::LearningRateAt(int64_t step) const {
  return optim::LearningRate(schedule_, step);
}

float ResNetTrainer::TrainStep(const float* images, const int32_t* labels) {
  float loss =
      model_.ForwardTrain(images, labels, static_cast<float>(recipe_.label_smoothing));
  model_.Backward();
  float* w = model_.parameters().data();
  float* g = model_.gradients().data();
  dist::AllReduceGradients(comm_, g, buckets_);
  const float lr = static_cast<float>(learning_rate());
  const float momentum = static_cast<float>(recipe_.momentum);
  if (recipe_.optimizer == OptimizerKind::kLars) {
    cpu::LarsStep({.lr = lr,
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
    double sum_sq = 0.0;
    for (const TensorSlice& s : l2_slices_)
      for (int64_t i = s.offset; i < s.offset + s.numel; ++i) {
        sum_sq += static_cast<double>(w[i]) * w[i];
        g[i] += 2.0f * wd * w[i];
      }
    loss += static_cast<float>(wd * sum_sq);
    cpu::LarsStep({.lr = lr, .momentum = momentum, .weight_decay = 0.0f}, sgd_slices_, w, g,
                  momentum_.data(), nullptr);
  }
  ++step_;
  comm_.AllReduceAverage(&loss, 1);
  return loss;
}

void ResNetTrainer::WarmUp(int steps) {
  if (steps <= 0) return;
  const std::span<float> params = model_.parameters(), buffers = model_.buffers();
  const std::vector<float> saved_params(params.begin(), params.end());
  const std::vector<float> saved_buffers(buffers.begin(), buffers.end());
  const std::vector<float> saved_momentum = momentum_;
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

  std::copy(saved_params.begin(), saved_params.end(), params.begin());
  std::copy(saved_buffers.begin(), saved_buffers.end(), buffers.begin());
  momentum_ = saved_momentum;
  step_ = saved_step;
  model_.set_num_batches_tracked(saved_tracked);
}

double ResNetTrainer::GlobalAccuracy(int64_t local_correct, int64_t local_total) {
  // Counts up to 2^24 are exact in fp32 (ImageNet val is 50,000 images).
  float counts[2] = {static_cast<float>(local_correct), static_cast<float>(local_total)};
  comm_.AllReduceSum(counts, 2);
  return counts[1] > 0.0f ? static_cast<double>(counts[0]) / counts[1] : 0.0;
}

}  // namespace mlperf::models
