#include "closed_division/resnet_log.h"

#include <cstdint>

namespace mlperf::closed {
namespace {

namespace key = mllog::key;

// Whole epochs are logged as integers, as the reference does (the SGD rules
// want an integer warm-up).
json::Value Epochs(double epochs) {
  if (epochs == static_cast<double>(static_cast<int64_t>(epochs)))
    return static_cast<int64_t>(epochs);
  return epochs;
}

}  // namespace

void LogSubmissionInfo(mllog::Logger& log, const RunPlan& plan) {
  log.Event(key::kSubmissionBenchmark, mllog::benchmark::kResnet);
  log.Event(key::kSubmissionOrg, plan.options.submitter);
  log.Event(key::kSubmissionDivision, mllog::value::kClosed);
  // A demonstration or a run of our own code on our own machine: research.
  log.Event(key::kSubmissionStatus, mllog::value::kResearch);
  log.Event(key::kSubmissionPlatform, plan.system_name);
}

void LogHyperparameters(mllog::Logger& log, const RunPlan& plan) {
  const ResnetRecipe& r = plan.recipe;
  const int64_t decay_steps = plan.steps_per_epoch() * r.decay_epochs;
  log.Event(key::kGlobalBatchSize, r.global_batch_size);
  log.Event(key::kGradientAccumulationSteps, 1);
  // Images per batch-norm statistics group: one rank's batch.
  log.Event(key::kModelBnSpan, plan.batch_per_rank);
  if (r.optimizer == Optimizer::kLars) {
    log.Event(key::kOptName, mllog::optimizer::kLars);
    log.Event(key::kLarsEpsilon, 0.0);
    log.Event(key::kLarsOptBaseLearningRate, r.base_lr);
    log.Event(key::kLarsOptEndLearningRate, r.end_lr);
    log.Event(key::kLarsOptLearningRateDecayPolyPower, static_cast<int64_t>(r.poly_power));
    log.Event(key::kLarsOptLearningRateDecaySteps, decay_steps);
    log.Event(key::kLarsOptLearningRateWarmupEpochs, Epochs(r.warmup_epochs));
    log.Event(key::kLarsOptMomentum, r.momentum);
    log.Event(key::kLarsOptWeightDecay, r.weight_decay);
  } else {
    log.Event(key::kOptName, mllog::optimizer::kSgd);
    log.Event(key::kSgdOptBaseLearningRate, r.base_lr);
    log.Event(key::kSgdOptEndLearningRate, r.end_lr);
    log.Event(key::kSgdOptLearningRateDecayPolyPower, static_cast<int64_t>(r.poly_power));
    log.Event(key::kSgdOptLearningRateDecaySteps, decay_steps);
    log.Event(key::kSgdOptWeightDecay, r.weight_decay);
    log.Event(key::kSgdOptMomentum, r.momentum);
    log.Event(key::kOptLearningRateWarmupEpochs, Epochs(r.warmup_epochs));
  }
  log.Event(key::kTrainSamples, plan.train_samples);
  log.Event(key::kEvalSamples, plan.eval_samples);
}

}  // namespace mlperf::closed
