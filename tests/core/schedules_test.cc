// Learning-rate schedules at their boundaries.
#include "reference/optim/schedules.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mlperf::optim {
namespace {

TEST(PolyWarmupTest, WarmupPeakAndDecayBoundaries) {
  // NVIDIA's 8xH100 recipe shape: base 11, end 1e-4, power 2.
  const PolyWarmupSchedule s{
      .base_lr = 11.0, .end_lr = 1e-4, .warmup_steps = 100, .train_steps = 1000, .power = 2.0};
  EXPECT_DOUBLE_EQ(LearningRate(s, 0), 0.0);
  EXPECT_DOUBLE_EQ(LearningRate(s, 1), 0.11);
  EXPECT_DOUBLE_EQ(LearningRate(s, 100), 11.0);  // warm-up ends at the peak
  // First decay step: D = 1000 - 100 + 1 = 901.
  EXPECT_DOUBLE_EQ(LearningRate(s, 101), (11.0 - 1e-4) * std::pow(1.0 - 1.0 / 901, 2) + 1e-4);
  // The last training step still sits above end_lr; the floor is reached at D.
  EXPECT_GT(LearningRate(s, 1000), 1e-4);
  EXPECT_DOUBLE_EQ(LearningRate(s, 1001), 1e-4);
  EXPECT_DOUBLE_EQ(LearningRate(s, 5000), 1e-4);
}

TEST(BertScheduleTest, WarmupThenLinearDecayToZero) {
  const BertSchedule s{.init_lr = 4e-4,
                       .num_train_steps = 1000,
                       .num_warmup_steps = 100,
                       .start_warmup_step = 0,
                       .power = 1.0};
  EXPECT_DOUBLE_EQ(LearningRate(s, 0), 0.0);
  EXPECT_DOUBLE_EQ(LearningRate(s, 99), 4e-4 * 99 / 100);
  // At the end of warm-up the decayed value takes over (not the peak).
  EXPECT_DOUBLE_EQ(LearningRate(s, 100), 4e-4 * (1.0 - 100.0 / 1000));
  EXPECT_DOUBLE_EQ(LearningRate(s, 1000), 0.0);
  EXPECT_DOUBLE_EQ(LearningRate(s, 2000), 0.0);
  // A negative start_warmup_step starts the run part-way into warm-up.
  BertSchedule late = s;
  late.start_warmup_step = -50;
  EXPECT_DOUBLE_EQ(LearningRate(late, 0), 4e-4 * 50 / 100);
}

TEST(UnetScheduleTest, PerEpochWarmupThenStepDecay) {
  const int64_t milestones[] = {3000, 4000};
  const UnetSchedule s{.lr = 2.0,
                       .init_lr = 1e-4,
                       .warmup_epochs = 1000,
                       .decay_epochs = milestones,
                       .decay_factor = 0.5};
  // Epoch 1 already uses init + delta/W (set at the start of each epoch).
  EXPECT_DOUBLE_EQ(LearningRate(s, 1), 1e-4 + (2.0 - 1e-4) / 1000);
  EXPECT_DOUBLE_EQ(LearningRate(s, 1000), 2.0);
  EXPECT_DOUBLE_EQ(LearningRate(s, 2999), 2.0);
  EXPECT_DOUBLE_EQ(LearningRate(s, 3000), 1.0);
  EXPECT_DOUBLE_EQ(LearningRate(s, 4000), 0.5);
}

}  // namespace
}  // namespace mlperf::optim
