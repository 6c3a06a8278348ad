// Learning-rate schedules at their boundaries, each at the optimizer steps
// the trainer asks for (from 1).
#include "reference/optim/schedules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

namespace mlperf::optim {
namespace {

TEST(PolynomialWithWarmupTest, WarmupPeakAndDecayBoundaries) {
  // NVIDIA's 8xH100 recipe shape: base 11, end 1e-4, power 2.
  const PolynomialWithWarmup s(
      {.base_lr = 11.0, .end_lr = 1e-4, .warmup_steps = 100, .train_steps = 1000, .power = 2.0});
  EXPECT_DOUBLE_EQ(s.At(0), 0.0);
  EXPECT_DOUBLE_EQ(s.At(1), 0.11);
  EXPECT_DOUBLE_EQ(s.At(100), 11.0);  // warm-up ends at the peak
  // First decay step: D = 1000 - 100 + 1 = 901.
  EXPECT_DOUBLE_EQ(s.At(101), (11.0 - 1e-4) * std::pow(1.0 - 1.0 / 901, 2) + 1e-4);
  // The last training step still sits above end_lr; the floor is reached at D.
  EXPECT_GT(s.At(1000), 1e-4);
  EXPECT_DOUBLE_EQ(s.At(1001), 1e-4);
  EXPECT_DOUBLE_EQ(s.At(5000), 1e-4);
}

// The BERT reference's schedule counts TensorFlow's global_step from 0:
// optimizer step n is global_step n - 1.
TEST(LinearDecayTest, WarmupThenLinearDecayToZero) {
  const LinearDecayParams p{.init_lr = 4e-4,
                            .train_steps = 1000,
                            .warmup_steps = 100,
                            .start_warmup_step = 0,
                            .power = 1.0};
  const LinearDecay s(p);
  EXPECT_DOUBLE_EQ(s.At(1), 0.0);
  EXPECT_DOUBLE_EQ(s.At(100), 4e-4 * 99 / 100);
  // At the end of warm-up the decayed value takes over (not the peak).
  EXPECT_DOUBLE_EQ(s.At(101), 4e-4 * (1.0 - 100.0 / 1000));
  EXPECT_DOUBLE_EQ(s.At(1001), 0.0);
  EXPECT_DOUBLE_EQ(s.At(2001), 0.0);
  // A negative start_warmup_step starts the run part-way into warm-up.
  LinearDecayParams late = p;
  late.start_warmup_step = -50;
  EXPECT_DOUBLE_EQ(LinearDecay(late).At(1), 4e-4 * 50 / 100);
}

// Set at the start of each epoch: steps 1-3 of 3-step epochs are epoch 1.
TEST(MultiStepPerEpochTest, PerEpochWarmupThenStepDecay) {
  const MultiStepPerEpoch s({.lr = 2.0,
                             .init_lr = 1e-4,
                             .warmup_epochs = 1000,
                             .milestones = {3000, 4000},
                             .decay_factor = 0.5,
                             .steps_per_epoch = 3});
  // Epoch 1 already uses init + delta/W.
  EXPECT_DOUBLE_EQ(s.AtEpoch(1), 1e-4 + (2.0 - 1e-4) / 1000);
  for (int64_t step : {1, 2, 3}) EXPECT_DOUBLE_EQ(s.At(step), s.AtEpoch(1));
  EXPECT_DOUBLE_EQ(s.At(4), s.AtEpoch(2));
  EXPECT_DOUBLE_EQ(s.AtEpoch(1000), 2.0);
  EXPECT_DOUBLE_EQ(s.AtEpoch(2999), 2.0);
  EXPECT_DOUBLE_EQ(s.AtEpoch(3000), 1.0);
  EXPECT_DOUBLE_EQ(s.AtEpoch(4000), 0.5);
  EXPECT_DOUBLE_EQ(s.At(3 * 3999), 1.0);      // the last step of epoch 3999
  EXPECT_DOUBLE_EQ(s.At(3 * 3999 + 1), 0.5);  // epoch 4000's first
}

// Megatron-LM's cosine decay: linear warm-up, half a cosine to min_lr at
// decay_steps, min_lr after.
TEST(CosineWithWarmupTest, WarmupHalfCosineThenTheFloor) {
  const CosineWithWarmup s(
      {.max_lr = 3e-4, .min_lr = 3e-5, .warmup_steps = 10, .decay_steps = 110});
  EXPECT_DOUBLE_EQ(s.At(1), 3e-5);
  EXPECT_DOUBLE_EQ(s.At(10), 3e-4);
  EXPECT_DOUBLE_EQ(s.At(60), 3e-5 + (3e-4 - 3e-5) * 0.5);  // half way: cos(pi/2) = 0
  EXPECT_DOUBLE_EQ(s.At(35), 3e-5 + (3e-4 - 3e-5) * 0.5 * (1 + std::cos(std::numbers::pi * 0.25)));
  EXPECT_DOUBLE_EQ(s.At(110), 3e-5);
  EXPECT_DOUBLE_EQ(s.At(1000), 3e-5);
  // Decreasing after the peak, never below the floor.
  for (int64_t step = 11; step <= 120; ++step) {
    EXPECT_LE(s.At(step), s.At(step - 1)) << step;
    EXPECT_GE(s.At(step), 3e-5) << step;
  }
  // Resumed from a checkpoint 40 steps in: its step s is step 40 + s.
  const CosineWithWarmup resumed(
      {.max_lr = 3e-4, .min_lr = 3e-5, .warmup_steps = 10, .decay_steps = 110, .start_step = 40});
  for (int64_t step = 1; step <= 80; ++step) EXPECT_EQ(resumed.At(step), s.At(40 + step)) << step;
}

}  // namespace
}  // namespace mlperf::optim
