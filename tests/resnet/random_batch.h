// ResNet test inputs: a batch of images uniform in [-1, 1) and labels below
// the model's class count, drawn from Philox streams of `seed`; and the
// recipe of the two-step trainer comparisons.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/core/philox.h"
#include "reference/models/resnet.h"
#include "reference/trainer/trainer.h"

namespace mlperf::models::test {

struct HostBatch {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

inline HostBatch RandomBatch(const ResNet& model, uint64_t seed) {
  HostBatch b{std::vector<float>(model.batch_size() * model.image_elements()),
              std::vector<int32_t>(model.batch_size())};
  for (size_t i = 0; i < b.images.size(); ++i)
    b.images[i] = 2.0f * core::PhiloxUniform(seed, 0, i) - 1.0f;
  for (size_t i = 0; i < b.labels.size(); ++i)
    b.labels[i] = static_cast<int32_t>(core::PhiloxBits(seed, 1, i) % model.config().num_classes);
  return b;
}

// Two steps (so momentum matters) at a learning rate where rounding is not
// amplified: the recipe both the CPU layout comparison
// (ResNetTrainerTest.TwoStepsAgreeAcrossLayouts) and the GPU-against-CPU
// trainer tests use, so that the first measures what the second's tolerance
// leaves for rounding.
inline train::TrainerConfig TwoStepRecipe(train::OptimizerKind kind) {
  return {.optimizer = kind,
          .base_lr = 0.1,
          .warmup_epochs = 1,
          .train_epochs = 4,
          .weight_decay = 5e-4,
          .steps_per_epoch = 2};
}

}  // namespace mlperf::models::test
