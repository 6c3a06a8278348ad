#include "benchmarks/bert/recipe.h"

#include <algorithm>
#include <string>
#include <utility>

#include "benchmarks/rcp_recipes.h"
#include "logging/mllog_keys.h"
#include "reference/optim/lamb.h"

namespace mlperf::benchmarks::bert {
namespace {

namespace key = mllog::key;

absl::StatusOr<Recipe> RecipeOf(const RcpReference& ref) {
  Recipe r;
  double train_steps = 0, warmup = 0, start = 0;
  for (const auto& [field, name] :
       {std::pair<double*, const char*>{&r.base_lr, "opt_base_learning_rate"},
        {&r.epsilon, "opt_epsilon"},
        {&train_steps, "opt_learning_rate_training_steps"},
        {&warmup, "num_warmup_steps"},
        {&start, "start_warmup_step"},
        {&r.beta1, "opt_lamb_beta_1"},
        {&r.beta2, "opt_lamb_beta_2"},
        {&r.weight_decay, "opt_lamb_weight_decay_rate"}}) {
    absl::StatusOr<double> v = ref.Number(name);
    if (!v.ok()) return v.status();
    *field = *v;
  }
  r.train_steps = static_cast<int64_t>(train_steps);
  r.warmup_steps = static_cast<int64_t>(warmup);
  r.start_warmup_step = static_cast<int64_t>(start);
  return r;
}

}  // namespace

int64_t EvalIntervalSamples(int64_t global_batch_size) {
  const double raw = 0.05 * (230.23 * static_cast<double>(global_batch_size) + 3'000'000.0);
  const int64_t interval = static_cast<int64_t>(raw) / 25'000 * 25'000;
  return std::max<int64_t>(interval, 25'000);  // the rules skip 0
}

absl::Status WikipediaPlan(int ranks, RunPlan& plan, Recipe& recipe) {
  absl::StatusOr<std::vector<RcpReference>> refs = ReadRcpReferences(plan.ruleset, "bert");
  if (!refs.ok()) return refs.status();
  const RcpReference* chosen = SmallestDividing(*refs, ranks);
  plan.rcp_batch_size = chosen != nullptr;
  plan.global_batch_size = chosen != nullptr ? chosen->global_batch_size : ranks;
  absl::StatusOr<Recipe> r = RecipeOf(chosen != nullptr ? *chosen : Smallest(*refs));
  if (!r.ok()) return r.status();
  recipe = *r;
  return absl::OkStatus();
}

std::vector<Hyperparameter> HyperparametersOf(const Recipe& r, const models::BertConfig& member,
                                              const RunPlan& plan) {
  std::vector<Hyperparameter> h;
  const auto add = [&h](std::string_view name, json::Value value) {
    h.emplace_back(std::string(name), std::move(value));
  };
  add(key::kGlobalBatchSize, plan.global_batch_size);
  add(key::kGradientAccumulationSteps, plan.gradient_accumulation_steps);
  add(key::kOptName, mllog::optimizer::kLamb);
  add(key::kOptBaseLearningRate, r.base_lr);
  add(key::kOptLambEpsilon, r.epsilon);
  add(key::kOptLearningRateTrainingSteps, r.train_steps);
  add(key::kOptLearningRateWarmupSteps, r.warmup_steps);
  add(key::kNumWarmupSteps, r.warmup_steps);
  add(key::kStartWarmupStep, r.start_warmup_step);
  add(key::kOptLambBeta1, r.beta1);
  add(key::kOptLambBeta2, r.beta2);
  add(key::kOptLambWeightDecayRate, r.weight_decay);
  add(key::kOptLambLearningRateDecayPolyPower, 1.0);
  add(key::kMaxSequenceLength, member.seq_len);
  add(key::kEvalSamples, plan.eval_samples);
  return h;
}

std::unique_ptr<optim::Optimizer> MakeOptimizer(const Recipe& r, const models::Model& model) {
  return std::make_unique<optim::Lamb>(
      optim::LambOptions{.beta1 = static_cast<float>(r.beta1),
                         .beta2 = static_cast<float>(r.beta2),
                         .epsilon = static_cast<float>(r.epsilon),
                         .weight_decay = static_cast<float>(r.weight_decay),
                         .max_grad_norm = 1.0f},
      model.slices());
}

std::unique_ptr<optim::LearningRateSchedule> MakeSchedule(const Recipe& r) {
  return std::make_unique<optim::LinearDecay>(
      optim::LinearDecayParams{.init_lr = r.base_lr,
                               .train_steps = r.train_steps,
                               .warmup_steps = r.warmup_steps,
                               .start_warmup_step = r.start_warmup_step,
                               .power = 1.0});
}

}  // namespace mlperf::benchmarks::bert
