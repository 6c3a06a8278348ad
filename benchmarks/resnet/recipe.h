// ResNet-50 v1.5's closed recipe: the hyperparameters the rules let a
// submitter choose (references.md 2.4-2.6), taken from the RCP reference run
// at the scale, and the model's shape.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/benchmark.h"
#include "benchmarks/plan.h"
#include "reference/models/model.h"
#include "reference/optim/optimizer.h"
#include "reference/optim/schedules.h"

namespace mlperf::benchmarks::resnet {

// ImageNet ILSVRC-2012 split sizes (reference imagenet_preprocessing.py).
inline constexpr int64_t kImagenetTrainImages = 1281167;
inline constexpr int64_t kImagenetValImages = 50000;
// Largest per-rank batch the recipes use (NVIDIA: 408 images per H100).
inline constexpr int64_t kMaxBatchPerRank = 408;

struct Recipe {
  bool lars = true;  // else SGD with momentum (closed_resnet_sgd)
  double base_lr = 10.5;
  double end_lr = 1e-4;     // fixed by the rules
  double poly_power = 2.0;  // fixed by the rules
  double warmup_epochs = 2;
  int64_t decay_epochs = 37;  // the schedule's horizon (NVIDIA's NUMEPOCHS)
  double momentum = 0.9;
  double weight_decay = 5e-5;    // 1e-4 * 2^k
  double label_smoothing = 0.1;  // 0 or 0.1
  double lars_eta = 0.001;
};

struct ModelShape {
  int64_t base_width = 64;
  std::array<int, 4> blocks = {3, 4, 6, 3};
  int num_classes = 1000;
  int image_size = 224;
  int resize_shorter = 256;
};

// ImageNet at `ranks` processes under `plan.ruleset`: the largest RCP batch
// size that splits into per-rank batches of at most kMaxBatchPerRank; else
// full per-rank batches with the hyperparameters of the nearest RCP batch
// size (no RCP then).
absl::Status ImagenetPlan(int ranks, RunPlan& plan, Recipe& recipe);

// SGD instead of LARS (--optimizer sgd): the closed rules want a base LR
// that is a multiple of 0.001; LARS's rates are far above what SGD
// tolerates, so the reference's linear scaling, 0.1 per 256 images.
void UseSgd(int64_t global_batch_size, Recipe& recipe);

// Every hyperparameter key the closed_resnet rules require, in log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe, const RunPlan& plan);

// LARS (its skip list: batch norms and biases), or tf.keras SGD with the
// reference's L2 term over the variables outside batch norms.
std::unique_ptr<optim::Optimizer> MakeOptimizer(const Recipe& recipe, const models::Model& model);
// Warm-up and polynomial decay over the decay horizon.
std::unique_ptr<optim::LearningRateSchedule> MakeSchedule(const Recipe& recipe,
                                                          int64_t steps_per_epoch);

}  // namespace mlperf::benchmarks::resnet
