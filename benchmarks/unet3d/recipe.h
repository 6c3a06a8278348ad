// 3D U-Net's closed recipe: the hyperparameters the rules let a submitter
// choose (references.md 3.5), taken from the RCP reference run at the scale,
// and the network's shape.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/benchmark.h"
#include "benchmarks/plan.h"
#include "reference/models/model.h"
#include "reference/optim/optimizer.h"
#include "reference/optim/schedules.h"

namespace mlperf::benchmarks::unet3d {

// KiTS19 as the closed rules fix it (closed_unet3d: train_samples 168,
// eval_samples 42).
inline constexpr int64_t kTrainCases = 168;
inline constexpr int64_t kEvalCases = 42;
// Largest per-GPU micro-batch at 128^3 (NVIDIA: 7 per H100); larger
// per-rank batches accumulate gradients.
inline constexpr int64_t kMaxMicroBatchPerGpu = 7;

struct Recipe {
  double base_lr = 2.0;
  double init_lr = 1e-4;  // the reference's warm-up start
  double warmup_epochs = 1000;
  std::vector<int64_t> decay_epochs;  // none in the reference
  double decay_factor = 1.0;
  double momentum = 0.9;
  double weight_decay = 0.0;
};

struct Shape {
  std::vector<int64_t> filters = {32, 64, 128, 256, 320};
  int64_t roi = 128;
};

// KiTS19 at `ranks` processes under `plan.ruleset`: the largest RCP batch
// size that splits over the ranks (on GPUs preferring one whose per-rank
// batch needs no accumulation); else the nearest RCP's recipe at the closest
// batch that splits.
absl::Status KitsPlan(int ranks, bool gpus, RunPlan& plan, Recipe& recipe);

// Every hyperparameter key the closed_unet3d rules require, in log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe, const Shape& shape,
                                              const RunPlan& plan);

// SGD with Nesterov momentum, as the reference's torch.optim.SGD: its one
// parameter group decays every tensor.
std::unique_ptr<optim::Optimizer> MakeOptimizer(const Recipe& recipe, const models::Model& model);
// Per-epoch linear warm-up, then multi-step decay.
std::unique_ptr<optim::LearningRateSchedule> MakeSchedule(const Recipe& recipe,
                                                          int64_t steps_per_epoch);

}  // namespace mlperf::benchmarks::unet3d
