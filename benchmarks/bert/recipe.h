// BERT-Large's closed recipe: the LAMB hyperparameters the rules let a
// submitter choose (references.md 4.4), taken from the RCP reference run at
// the scale, and the evaluation interval the rules fix.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/benchmark.h"
#include "benchmarks/plan.h"
#include "reference/models/bert.h"
#include "reference/optim/optimizer.h"
#include "reference/optim/schedules.h"

namespace mlperf::benchmarks::bert {

// The reference's data and checkpoint (references.md 4.2, 4.3).
inline constexpr int64_t kEvalSamples = 10'000;
inline constexpr std::string_view kCheckpointName = "model.ckpt-28252";

struct Recipe {
  double base_lr = 3.5e-4;
  int64_t train_steps = 13'700;  // opt_learning_rate_training_steps
  int64_t warmup_steps = 0;
  int64_t start_warmup_step = 0;
  double beta1 = 0.9, beta2 = 0.999, epsilon = 1e-6, weight_decay = 0.01;
};

// Samples between evaluations for a global batch size: FLOOR(0.05 *
// (230.23 * GBS + 3,000,000), 25000), never 0.
int64_t EvalIntervalSamples(int64_t global_batch_size);

// Wikipedia at `ranks` processes under `plan.ruleset`: the smallest RCP
// batch size that splits over the ranks (the fewest samples to converge);
// else the smallest RCP's recipe at one sample per rank.
absl::Status WikipediaPlan(int ranks, RunPlan& plan, Recipe& recipe);

// Every hyperparameter key the closed_bert rules require, in log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe,
                                              const models::BertConfig& member,
                                              const RunPlan& plan);

// LAMB after global-norm clipping at 1.0 (its skip list: LayerNorm, biases).
std::unique_ptr<optim::Optimizer> MakeOptimizer(const Recipe& recipe, const models::Model& model);
// Linear warm-up from start_warmup_step, then linear decay to 0.
std::unique_ptr<optim::LearningRateSchedule> MakeSchedule(const Recipe& recipe);

}  // namespace mlperf::benchmarks::bert
