#include "reference/optim/schedules.h"

#include <algorithm>
#include <cmath>

namespace mlperf::optim {

double LearningRate(const PolyWarmupSchedule& s, int64_t step) {
  if (step <= s.warmup_steps && s.warmup_steps > 0)
    return s.base_lr * static_cast<double>(step) / static_cast<double>(s.warmup_steps);
  const double decay_steps = static_cast<double>(s.train_steps - s.warmup_steps + 1);
  const double progress =
      std::min(static_cast<double>(step - s.warmup_steps), decay_steps) / decay_steps;
  return (s.base_lr - s.end_lr) * std::pow(1.0 - progress, s.power) + s.end_lr;
}

double LearningRate(const BertSchedule& s, int64_t step) {
  const int64_t warm = step - s.start_warmup_step;
  if (s.num_warmup_steps > 0 && warm < s.num_warmup_steps)
    return s.init_lr * static_cast<double>(warm) / static_cast<double>(s.num_warmup_steps);
  const double t = static_cast<double>(std::min(step, s.num_train_steps));
  return s.init_lr * std::pow(1.0 - t / static_cast<double>(s.num_train_steps), s.power);
}

double LearningRate(const UnetSchedule& s, int64_t epoch) {
  if (s.warmup_epochs > 0 && epoch <= s.warmup_epochs)
    return s.init_lr +
           (s.lr - s.init_lr) * static_cast<double>(epoch) / static_cast<double>(s.warmup_epochs);
  int64_t passed = 0;
  for (int64_t m : s.decay_epochs) passed += epoch >= m ? 1 : 0;
  return s.lr * std::pow(s.decay_factor, static_cast<double>(passed));
}

}  // namespace mlperf::optim
