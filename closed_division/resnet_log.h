// The fixed parts of a closed-division ResNet MLLOG log: the submission_*
// keys (before init_start) and every hyperparameter key the closed_resnet
// rules of ruleset 4.0.0 require for the chosen optimizer (references.md 2.5).
#pragma once

#include "closed_division/config.h"
#include "logging/mllog.h"

namespace mlperf::closed {

// submission_benchmark/org/division/status/platform. The log's ruleset is
// chosen by the checker from these (4.0.0 still wants submission_status).
void LogSubmissionInfo(mllog::Logger& log, const RunPlan& plan);

// global_batch_size, gradient_accumulation_steps, opt_name, the lars_* or
// sgd_* keys, model_bn_span, train_samples and eval_samples.
void LogHyperparameters(mllog::Logger& log, const RunPlan& plan);

}  // namespace mlperf::closed
