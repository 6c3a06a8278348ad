// A trainer with the BERT benchmark's LAMB and schedule, for the BERT tests.
#pragma once

#include <memory>

#include "benchmarks/bert/recipe.h"
#include "reference/dist/communicator.h"
#include "reference/models/bert.h"
#include "reference/trainer/trainer.h"

namespace mlperf::models::test {

inline std::unique_ptr<train::Trainer> LambTrainer(Bert& model,
                                                   const benchmarks::bert::Recipe& recipe,
                                                   dist::Communicator& comm,
                                                   const train::TrainerConfig& config = {}) {
  return std::make_unique<train::Trainer>(model, benchmarks::bert::MakeOptimizer(recipe, model),
                                          benchmarks::bert::MakeSchedule(recipe), config, comm);
}

}  // namespace mlperf::models::test
