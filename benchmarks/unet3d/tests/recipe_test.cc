// The 3D U-Net recipe in the shared trainer: torch.optim.SGD with Nesterov
// momentum, and the reference's per-epoch warm-up from 1e-4 then multi-step
// decay.
#include "benchmarks/unet3d/recipe.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "reference/dist/communicator.h"
#include "reference/models/unet3d.h"
#include "reference/trainer/trainer.h"

namespace mlperf::benchmarks::unet3d {
namespace {

Recipe TestRecipe(double weight_decay = 0.0) {
  return {.base_lr = 2.0,
          .init_lr = 1e-4,
          .warmup_epochs = 4,
          .decay_epochs = {6, 8},
          .decay_factor = 0.5,
          .momentum = 0.9,
          .weight_decay = weight_decay};
}

// Three steps an epoch.
std::unique_ptr<train::Trainer> UnetTrainer(models::UNet3D& model, const Recipe& recipe,
                                            dist::Communicator& comm) {
  return std::make_unique<train::Trainer>(model, MakeOptimizer(recipe, model),
                                          MakeSchedule(recipe, 3), train::TrainerConfig{}, comm);
}

TEST(UNet3DTrainerTest, LearningRateWarmsUpPerEpochThenDecaysAtMilestones) {
  models::UNet3D model({.filters = {2, 4}, .roi = 8}, 2);
  auto comm = dist::MakeSingleProcessCommunicator();
  const std::unique_ptr<train::Trainer> owned = UnetTrainer(model, TestRecipe(), *comm);
  const train::Trainer& trainer = *owned;
  // Steps 1-3 are epoch 1: already init + (lr - init) / 4, as the reference
  // sets the rate at the start of each epoch.
  for (int64_t step : {1, 2, 3}) EXPECT_DOUBLE_EQ(trainer.LearningRateAt(step), 1e-4 + 1.9999 / 4);
  EXPECT_DOUBLE_EQ(trainer.LearningRateAt(4), 1e-4 + 1.9999 * 2 / 4);
  EXPECT_DOUBLE_EQ(trainer.LearningRateAt(12), 2.0);  // epoch 4: the end of the warm-up
  EXPECT_DOUBLE_EQ(trainer.LearningRateAt(13), 2.0);  // epoch 5
  EXPECT_DOUBLE_EQ(trainer.LearningRateAt(16), 1.0);  // epoch 6: first milestone
  EXPECT_DOUBLE_EQ(trainer.LearningRateAt(22), 0.5);  // epoch 8: second
}

TEST(UNet3DTrainerTest, NesterovStepsAsTorchSgd) {
  models::UNet3D model({.filters = {2, 4}, .roi = 8}, 2);
  model.Initialize(5);
  auto comm = dist::MakeSingleProcessCommunicator();
  const std::unique_ptr<train::Trainer> owned = UnetTrainer(model, TestRecipe(0.01), *comm);
  train::Trainer& trainer = *owned;
  const models::OwnedBatch batch = model.SyntheticBatch();
  std::vector<float> w = model.ParametersToHost(), buf(w.size(), 0.0f);
  for (int step = 1; step <= 2; ++step) {
    // The gradient at the current weights, from the model itself.
    model.ForwardTrain(batch.batch);
    model.Backward();
    const std::vector<float> g = model.GradientsToHost();
    const float lr = static_cast<float>(trainer.LearningRateAt(step));
    for (size_t i = 0; i < w.size(); ++i) {
      const float d = g[i] + 0.01f * w[i];
      buf[i] = 0.9f * buf[i] + d;
      w[i] -= lr * (d + 0.9f * buf[i]);
    }
    trainer.TrainStep(batch.batch);
    const std::vector<float> got = model.ParametersToHost();
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_FLOAT_EQ(got[i], w[i]) << "step " << step << " " << i;
  }
}

}  // namespace
}  // namespace mlperf::benchmarks::unet3d
