#include "benchmarks/resnet/recipe.h"

#include <cmath>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "benchmarks/rcp_recipes.h"
#include "logging/mllog_keys.h"
#include "reference/optim/lars.h"
#include "reference/optim/sgd.h"

namespace mlperf::benchmarks::resnet {
namespace {

namespace key = mllog::key;

// The recipe of an RCP reference run: its LARS hyperparameters, the decay
// horizon in epochs from its decay steps (NVIDIA's NUMEPOCHS).
absl::StatusOr<Recipe> RecipeOf(const RcpReference& ref) {
  Recipe r;
  for (const auto& [field, key] :
       {std::pair<double*, const char*>{&r.base_lr, "opt_base_learning_rate"},
        {&r.warmup_epochs, "opt_learning_rate_warmup_epochs"},
        {&r.momentum, "opt_momentum"},
        {&r.weight_decay, "opt_weight_decay"}}) {
    absl::StatusOr<double> v = ref.Number(key);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  absl::StatusOr<double> decay_steps = ref.Number("opt_learning_rate_decay_steps");
  if (!decay_steps.ok()) return decay_steps.status();
  r.decay_epochs = std::llround(*decay_steps * static_cast<double>(ref.global_batch_size) /
                                static_cast<double>(kImagenetTrainImages));
  return r;
}

// Whole epochs are logged as integers, as the reference does (the SGD rules
// want an integer warm-up).
json::Value Epochs(double epochs) {
  if (epochs == static_cast<double>(static_cast<int64_t>(epochs)))
    return static_cast<int64_t>(epochs);
  return epochs;
}

}  // namespace

absl::Status ImagenetPlan(int ranks, RunPlan& plan, Recipe& recipe) {
  absl::StatusOr<std::vector<RcpReference>> refs = ReadRcpReferences(plan.ruleset, "resnet");
  if (!refs.ok()) return refs.status();
  const RcpReference* chosen = nullptr;
  for (const RcpReference& r : *refs) {
    if (r.global_batch_size % ranks == 0 && r.global_batch_size / ranks <= kMaxBatchPerRank &&
        (chosen == nullptr || r.global_batch_size > chosen->global_batch_size))
      chosen = &r;
  }
  plan.rcp_batch_size = chosen != nullptr;
  plan.global_batch_size = kMaxBatchPerRank * ranks;
  if (chosen == nullptr) {
    chosen = &refs->front();
    for (const RcpReference& r : *refs) {
      if (std::llabs(r.global_batch_size - plan.global_batch_size) <
          std::llabs(chosen->global_batch_size - plan.global_batch_size))
        chosen = &r;
    }
  } else {
    plan.global_batch_size = chosen->global_batch_size;
  }
  absl::StatusOr<Recipe> r = RecipeOf(*chosen);
  if (!r.ok()) return r.status();
  recipe = *r;
  plan.train_samples = kImagenetTrainImages;
  plan.eval_samples = kImagenetValImages;
  return absl::OkStatus();
}

void UseSgd(int64_t global_batch_size, Recipe& recipe) {
  recipe.lars = false;
  const double lr = 0.1 * static_cast<double>(global_batch_size) / 256.0;
  recipe.base_lr = std::max(0.001, std::round(lr * 1000.0) / 1000.0);
  recipe.weight_decay = 1e-4;
}

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const RunPlan& plan) {
  const int64_t decay_steps = plan.schedule.steps_per_epoch * r.decay_epochs;
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  // Images per batch-norm statistics group: one rank's batch.
  add(key::kModelBnSpan, plan.batch_per_rank);
  const int64_t power = static_cast<int64_t>(r.poly_power);
  if (r.lars) {
    add(key::kOptName, mllog::optimizer::kLars);
    add(key::kLarsEpsilon, 0.0);
    add(key::kLarsOptBaseLearningRate, r.base_lr);
    add(key::kLarsOptEndLearningRate, r.end_lr);
    add(key::kLarsOptLearningRateDecayPolyPower, power);
    add(key::kLarsOptLearningRateDecaySteps, decay_steps);
    add(key::kLarsOptLearningRateWarmupEpochs, Epochs(r.warmup_epochs));
    add(key::kLarsOptMomentum, r.momentum);
    add(key::kLarsOptWeightDecay, r.weight_decay);
  } else {
    add(key::kOptName, mllog::optimizer::kSgd);
    add(key::kSgdOptBaseLearningRate, r.base_lr);
    add(key::kSgdOptEndLearningRate, r.end_lr);
    add(key::kSgdOptLearningRateDecayPolyPower, power);
    add(key::kSgdOptLearningRateDecaySteps, decay_steps);
    add(key::kSgdOptWeightDecay, r.weight_decay);
    add(key::kSgdOptMomentum, r.momentum);
    add(key::kOptLearningRateWarmupEpochs, Epochs(r.warmup_epochs));
  }
  add(key::kTrainSamples, plan.train_samples);
  add(key::kEvalSamples, plan.eval_samples);
  return h;
}

std::unique_ptr<optim::Optimizer> MakeOptimizer(const Recipe& r, const models::Model& model) {
  const std::vector<TensorSlice> slices = model.slices();
  if (r.lars) {
    return std::make_unique<optim::Lars>(
        optim::LarsOptions{.momentum = static_cast<float>(r.momentum),
                           .weight_decay = static_cast<float>(r.weight_decay),
                           .eeta = static_cast<float>(r.lars_eta)},
        slices);
  }
  // resnet_runnable.py: L2 over the variables without 'batch_normalization'
  // in their names, so the classifier's bias is in (it is not in LARS's
  // skip sense).
  std::vector<TensorSlice> l2;
  const std::vector<const layers::Parameter*> params = model.trainable_parameters();
  for (size_t i = 0; i < slices.size(); ++i)
    if (!params[i]->batch_norm) l2.push_back(slices[i]);
  return std::make_unique<optim::KerasSgd>(
      optim::KerasSgdOptions{.momentum = static_cast<float>(r.momentum),
                             .weight_decay = static_cast<float>(r.weight_decay)},
      slices, std::move(l2));
}

std::unique_ptr<optim::LearningRateSchedule> MakeSchedule(const Recipe& r,
                                                          int64_t steps_per_epoch) {
  return std::make_unique<optim::PolynomialWithWarmup>(optim::PolynomialWithWarmupParams{
      .base_lr = r.base_lr,
      .end_lr = r.end_lr,
      .warmup_steps = static_cast<int64_t>(r.warmup_epochs * static_cast<double>(steps_per_epoch)),
      .train_steps = r.decay_epochs * steps_per_epoch,
      .power = r.poly_power});
}

}  // namespace mlperf::benchmarks::resnet
