// DLRM-dcnv2 configured for one invocation: the recipe (Adagrad, one rate,
// no warm-up or decay, as the rules check), the model, the exact-AUC
// evaluator, and the day files of the reference's Criteo multi-hot set (or
// the generated demonstration days) read batch by batch from their maps.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "benchmarks/benchmark.h"
#include "datasets/criteo/generated.h"
#include "reference/models/dlrm.h"

namespace mlperf::benchmarks::dlrm_dcnv2 {

struct Recipe {
  double base_lr = 0;  // both from the RCP references
  double epsilon = 0;
};

// The rules' hyperparameters, in the reference's log order.
std::vector<Hyperparameter> HyperparametersOf(const Recipe& recipe, const RunPlan& plan);

class DlrmSetup final : public BenchmarkSetup {
 public:
  // `generated`: the demonstration's days (plan.demo), written by PrepareData.
  DlrmSetup(RunPlan plan, Recipe recipe, models::DlrmConfig member,
            criteo::GeneratedCriteoOptions generated);

  std::vector<Hyperparameter> Hyperparameters() const override {
    return HyperparametersOf(recipe_, plan_);
  }
  std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                           uint64_t seed) const override;
  std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const override;
  std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const override;
  std::unique_ptr<eval::Evaluator> MakeEvaluator(models::Model& model) const override;
  absl::Status PrepareData() const override;
  absl::Status CheckData() const override;
  absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                         int rank) const override;
  std::string ReadmeSection() const override;

  const models::DlrmConfig& member() const { return member_; }
  // The demonstration evaluates its generated validation samples tiled to
  // the reference's eval_samples (which the rules check): their number, and
  // the size of the tiled set (0: no tiling, real data).
  int64_t Distinct() const { return (generated_.rows_per_day + 1) / 2; }
  int64_t TiledTo() const { return plan_.demo ? plan_.eval_samples : 0; }

 private:
  Recipe recipe_;
  models::DlrmConfig member_;
  criteo::GeneratedCriteoOptions generated_;
};

}  // namespace mlperf::benchmarks::dlrm_dcnv2
