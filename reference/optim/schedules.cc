#include "reference/optim/schedules.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace mlperf::optim {

double PolynomialWithWarmup::At(int64_t step) const {
  if (step <= p_.warmup_steps && p_.warmup_steps > 0)
    return p_.base_lr * static_cast<double>(step) / static_cast<double>(p_.warmup_steps);
  const double decay_steps = static_cast<double>(p_.train_steps - p_.warmup_steps + 1);
  const double progress =
      std::min(static_cast<double>(step - p_.warmup_steps), decay_steps) / decay_steps;
  return (p_.base_lr - p_.end_lr) * std::pow(1.0 - progress, p_.power) + p_.end_lr;
}

double LinearDecay::At(int64_t step) const {
  const int64_t global_step = step - 1;
  const int64_t warm = global_step - p_.start_warmup_step;
  if (p_.warmup_steps > 0 && warm < p_.warmup_steps)
    return p_.init_lr * static_cast<double>(warm) / static_cast<double>(p_.warmup_steps);
  const double t = static_cast<double>(std::min(global_step, p_.train_steps));
  return p_.init_lr * std::pow(1.0 - t / static_cast<double>(p_.train_steps), p_.power);
}

double MultiStepPerEpoch::At(int64_t step) const {
  return AtEpoch((step - 1) / p_.steps_per_epoch + 1);
}

double MultiStepPerEpoch::AtEpoch(int64_t epoch) const {
  if (p_.warmup_epochs > 0 && epoch <= p_.warmup_epochs)
    return p_.init_lr + (p_.lr - p_.init_lr) * static_cast<double>(epoch) /
                            static_cast<double>(p_.warmup_epochs);
  int64_t passed = 0;
  for (int64_t m : p_.milestones) passed += epoch >= m ? 1 : 0;
  return p_.lr * std::pow(p_.decay_factor, static_cast<double>(passed));
}

double CosineWithWarmup::At(int64_t step) const {
  step += p_.start_step;
  if (p_.warmup_steps > 0 && step <= p_.warmup_steps)
    return p_.max_lr * static_cast<double>(step) / static_cast<double>(p_.warmup_steps);
  const double span = static_cast<double>(std::max<int64_t>(1, p_.decay_steps - p_.warmup_steps));
  const double r = std::min(1.0, static_cast<double>(step - p_.warmup_steps) / span);
  return p_.min_lr + (p_.max_lr - p_.min_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * r));
}

double LinearWarmupFromFactor::At(int64_t step) const {
  const int64_t x = step - 1;  // LambdaLR's count of steps taken before this one
  if (x >= warmup_) return base_;
  const double alpha = static_cast<double>(x) / static_cast<double>(warmup_);
  return base_ * (factor_ * (1 - alpha) + alpha);
}

}  // namespace mlperf::optim
