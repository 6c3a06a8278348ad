#include "benchmarks/unet3d/recipe.h"

#include <cmath>
#include <string>
#include <string_view>
#include <utility>

#include "benchmarks/rcp_recipes.h"
#include "logging/mllog_keys.h"
#include "reference/optim/sgd.h"

namespace mlperf::benchmarks::unet3d {
namespace {

namespace key = mllog::key;

// The recipe of an RCP reference run. Its warm-up is logged in samples
// (from ruleset 4.0.0), turned into epochs of the 168 training cases.
absl::StatusOr<Recipe> RecipeOf(const RcpReference& ref) {
  Recipe r;
  for (const auto& [field, name] :
       {std::pair<double*, const char*>{&r.base_lr, "opt_base_learning_rate"},
        {&r.momentum, "opt_momentum"},
        {&r.warmup_epochs, "opt_learning_rate_warmup_epochs"},
        {&r.init_lr, "opt_initial_learning_rate"},
        {&r.decay_factor, "opt_learning_rate_decay_factor"},
        {&r.weight_decay, "opt_weight_decay"}}) {
    absl::StatusOr<double> v = ref.Number(name);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  r.warmup_epochs /= static_cast<double>(kTrainCases);
  if (const json::Value* b = ref.hyperparameters.Find("opt_learning_rate_decay_boundary_epochs");
      b != nullptr && b->is_array()) {
    for (const json::Value& e : b->as_array()) r.decay_epochs.push_back(e.as_int() / kTrainCases);
  }
  return r;
}

// Epoch counts are logged in samples, as the RCPs of ruleset 4.0.0.
json::Value LoggedEpochs(double epochs, const RunPlan& plan) {
  const double logged = plan.schedule.log_samples
                            ? epochs * static_cast<double>(plan.schedule.samples_per_epoch)
                            : epochs;
  if (logged == std::floor(logged)) return static_cast<int64_t>(logged);
  return logged;
}

}  // namespace

absl::Status KitsPlan(int ranks, bool gpus, RunPlan& plan, Recipe& recipe) {
  absl::StatusOr<std::vector<RcpReference>> refs = ReadRcpReferences(plan.ruleset, "unet3d");
  if (!refs.ok()) return refs.status();
  const RcpReference* chosen = nullptr;
  auto better = [&](const RcpReference& r) {
    if (chosen == nullptr) return true;
    const bool fits = r.global_batch_size / ranks <= kMaxMicroBatchPerGpu;
    const bool chosen_fits = chosen->global_batch_size / ranks <= kMaxMicroBatchPerGpu;
    if (gpus && fits != chosen_fits) return fits;
    // Fewer accumulation steps first, then the smaller batch (faster to converge).
    return gpus && fits ? r.global_batch_size > chosen->global_batch_size
                        : r.global_batch_size < chosen->global_batch_size;
  };
  for (const RcpReference& r : *refs) {
    if (r.global_batch_size % ranks == 0 && better(r)) chosen = &r;
  }
  plan.rcp_batch_size = chosen != nullptr;
  if (chosen == nullptr) {
    // No RCP batch splits: one sample per rank at the smallest RCP's recipe.
    chosen = &refs->front();
    for (const RcpReference& r : *refs)
      if (r.global_batch_size < chosen->global_batch_size) chosen = &r;
    plan.global_batch_size = ranks;
  } else {
    plan.global_batch_size = chosen->global_batch_size;
  }
  absl::StatusOr<Recipe> r = RecipeOf(*chosen);
  if (!r.ok()) return r.status();
  recipe = *r;
  return absl::OkStatus();
}

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const Shape& shape,
                                              const RunPlan& plan) {
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  const json::Value roi = json::Array{shape.roi, shape.roi, shape.roi};
  json::Array boundaries;
  for (int64_t e : r.decay_epochs) boundaries.push_back(LoggedEpochs(static_cast<double>(e), plan));
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  add("samples_per_epoch", plan.schedule.samples_per_epoch);
  // SGD with Nesterov momentum, as the reference's torch.optim.SGD.
  add(key::kOptName, mllog::optimizer::kSgd);
  add(key::kOptBaseLearningRate, r.base_lr);
  add("opt_initial_learning_rate", r.init_lr);
  add(key::kOptLearningRateWarmupEpochs, LoggedEpochs(r.warmup_epochs, plan));
  add(key::kOptLearningRateDecayBoundaryEpochs, std::move(boundaries));
  add(key::kOptLearningRateDecayFactor, r.decay_factor);
  add(key::kOptWeightDecay, r.weight_decay);
  add(key::kOptMomentum, r.momentum);
  add(key::kOversampling, 0.4);
  add(key::kTrainingInputShape, roi);
  add(key::kValidationInputShape, roi);
  add(key::kValidationOverlap, 0.5);
  add(key::kTrainSamples, plan.train_samples);
  add(key::kEvalSamples, plan.eval_samples);
  return h;
}

std::unique_ptr<optim::Optimizer> MakeOptimizer(const Recipe& r, const models::Model& model) {
  std::vector<TensorSlice> slices = model.slices();
  for (TensorSlice& s : slices) s.no_weight_decay = false;
  return std::make_unique<optim::Sgd>(
      optim::SgdOptions{.momentum = static_cast<float>(r.momentum),
                        .weight_decay = static_cast<float>(r.weight_decay),
                        .nesterov = true},
      std::move(slices));
}

std::unique_ptr<optim::LearningRateSchedule> MakeSchedule(const Recipe& r,
                                                          int64_t steps_per_epoch) {
  return std::make_unique<optim::MultiStepPerEpoch>(
      optim::MultiStepPerEpochParams{.lr = r.base_lr,
                                     .init_lr = r.init_lr,
                                     .warmup_epochs = static_cast<int64_t>(r.warmup_epochs),
                                     .milestones = r.decay_epochs,
                                     .decay_factor = r.decay_factor,
                                     .steps_per_epoch = steps_per_epoch});
}

}  // namespace mlperf::benchmarks::unet3d
