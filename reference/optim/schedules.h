// Learning-rate schedules of the three references, as pure functions of the
// step (or epoch) so that a resumed run and every rank agree.
#pragma once

#include <cstdint>
#include <span>

namespace mlperf::optim {

// ResNet reference lars_util.py PolynomialDecayWithWarmup:
//   step <= warmup: base * step / warmup
//   else: (base - end) * (1 - min(step - warmup, D) / D)^power + end,
//   D = train_steps - warmup_steps + 1.
struct PolyWarmupSchedule {
  double base_lr = 0.0;
  double end_lr = 1e-4;
  int64_t warmup_steps = 0;
  int64_t train_steps = 0;
  double power = 2.0;
};
double LearningRate(const PolyWarmupSchedule& s, int64_t step);

// BERT reference optimization.py create_optimizer: polynomial decay of init_lr
// to 0 over num_train_steps, overridden during warm-up by
// init_lr * (step - start_warmup_step) / num_warmup_steps.
struct BertSchedule {
  double init_lr = 0.0;
  int64_t num_train_steps = 0;
  int64_t num_warmup_steps = 0;
  int64_t start_warmup_step = 0;
  double power = 1.0;
};
double LearningRate(const BertSchedule& s, int64_t step);

// 3D U-Net reference runtime/training.py: linear warm-up per epoch from
// init_lr to lr over warmup_epochs (epoch e <= W: init + (lr - init) * e / W),
// then MultiStepLR: lr * factor^(number of milestones <= epoch).
struct UnetSchedule {
  double lr = 0.0;
  double init_lr = 1e-4;
  int64_t warmup_epochs = 0;
  std::span<const int64_t> decay_epochs;
  double decay_factor = 1.0;
};
double LearningRate(const UnetSchedule& s, int64_t epoch);

}  // namespace mlperf::optim
