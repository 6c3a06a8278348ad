// Learning-rate schedules, named by their shape; a benchmark builds the one
// its reference uses. Each is a pure function of the optimizer step, so a
// resumed run and every rank agree.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace mlperf::optim {

class LearningRateSchedule {
 public:
  virtual ~LearningRateSchedule() = default;
  // The rate of optimizer step `step`; steps count from 1, so the first step
  // does not get a zero rate and a warm-up over W steps peaks at step W.
  virtual double At(int64_t step) const = 0;
};

// One rate throughout (DLRM-dcnv2: no warm-up, no decay).
class ConstantRate final : public LearningRateSchedule {
 public:
  explicit ConstantRate(double lr) : lr_(lr) {}
  double At(int64_t) const override { return lr_; }

 private:
  double lr_;
};

// A linear warm-up from factor x base_lr over warmup_steps, then base_lr
// (torchvision's detection references' warmup_lr_scheduler, RetinaNet's):
// step s (from 1) of the warm-up runs at base * (factor + (1 - factor) *
// (s - 1) / warmup).
class LinearWarmupFromFactor final : public LearningRateSchedule {
 public:
  LinearWarmupFromFactor(double base_lr, double factor, int64_t warmup_steps)
      : base_(base_lr), factor_(factor), warmup_(warmup_steps) {}
  double At(int64_t step) const override;

 private:
  double base_, factor_;
  int64_t warmup_;
};

// Linear warm-up to base_lr, then polynomial decay to end_lr (the ResNet
// reference's lars_util.py PolynomialDecayWithWarmup):
//   step <= warmup: base * step / warmup
//   else: (base - end) * (1 - min(step - warmup, D) / D)^power + end,
//   D = train_steps - warmup_steps + 1.
struct PolynomialWithWarmupParams {
  double base_lr = 0.0;
  double end_lr = 1e-4;
  int64_t warmup_steps = 0;
  int64_t train_steps = 0;
  double power = 2.0;
};
class PolynomialWithWarmup final : public LearningRateSchedule {
 public:
  explicit PolynomialWithWarmup(const PolynomialWithWarmupParams& p) : p_(p) {}
  double At(int64_t step) const override;

 private:
  PolynomialWithWarmupParams p_;
};

// Decay from init_lr to 0 over train_steps, counted from the start and
// overridden during a linear warm-up from start_warmup_step (the BERT
// reference's optimization.py; power 1 is linear). TensorFlow's global_step
// counts from 0: step s here is global_step s - 1.
struct LinearDecayParams {
  double init_lr = 0.0;
  int64_t train_steps = 0;
  int64_t warmup_steps = 0;
  int64_t start_warmup_step = 0;
  double power = 1.0;
};
class LinearDecay final : public LearningRateSchedule {
 public:
  explicit LinearDecay(const LinearDecayParams& p) : p_(p) {}
  double At(int64_t step) const override;

 private:
  LinearDecayParams p_;
};

// Set at the start of each epoch (epochs count from 1): a linear warm-up per
// epoch from init_lr to lr over warmup_epochs (epoch e <= W: init + (lr -
// init) * e / W), then multi-step decay, lr * factor^(milestones <= epoch)
// (the 3D U-Net reference's runtime/training.py with MultiStepLR).
struct MultiStepPerEpochParams {
  double lr = 0.0;
  double init_lr = 1e-4;
  int64_t warmup_epochs = 0;
  std::vector<int64_t> milestones;
  double decay_factor = 1.0;
  int64_t steps_per_epoch = 1;
};
class MultiStepPerEpoch final : public LearningRateSchedule {
 public:
  explicit MultiStepPerEpoch(MultiStepPerEpochParams p) : p_(std::move(p)) {}
  double At(int64_t step) const override;
  // The rate of epoch `epoch` (from 1).
  double AtEpoch(int64_t epoch) const;

 private:
  MultiStepPerEpochParams p_;
};

// Linear warm-up to max_lr over warmup_steps, then half a cosine down to
// min_lr at decay_steps, min_lr after (Megatron-LM's cosine decay, the LLM
// references'):
//   step <= warmup: max * step / warmup
//   else: min + (max - min) * (1 + cos(pi * r)) / 2,
//   r = min(1, (step - warmup) / (decay_steps - warmup)).
struct CosineWithWarmupParams {
  double max_lr = 0.0;
  double min_lr = 0.0;
  int64_t warmup_steps = 0;
  int64_t decay_steps = 0;
  // The steps a starting checkpoint already took: step s of this run is
  // step start_step + s of the schedule (GPT-3 resumes its reference's).
  int64_t start_step = 0;
};
class CosineWithWarmup final : public LearningRateSchedule {
 public:
  explicit CosineWithWarmup(const CosineWithWarmupParams& p) : p_(p) {}
  double At(int64_t step) const override;

 private:
  CosineWithWarmupParams p_;
};

}  // namespace mlperf::optim
