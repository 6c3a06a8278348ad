// A closed-division benchmark as the run loop sees it. A benchmark is a
// registry entry (Benchmark: what the rules fix, and how to configure it for
// a scale), a model (models::Model) and a data pipeline (DataPipeline); the
// loop, the trainer and the package writer know no benchmark by name.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "closed_division/config.h"
#include "reference/core/tensor.h"
#include "reference/models/model.h"
#include "reference/trainer/trainer.h"

namespace mlperf::closed {

enum class Split { kTrain, kEval };

// Batches for one rank. Training batches never run out (epochs follow each
// other); an evaluation pass starts with StartEval and ends when Next
// returns false, having given each evaluation sample to exactly one rank
// (padding a short last batch; Batch::count says how many are real).
class DataPipeline {
 public:
  virtual ~DataPipeline() = default;
  // Samples in the split over all ranks.
  virtual int64_t size() const = 0;
  // The next batch; its tensors stay valid until the next call.
  virtual absl::StatusOr<bool> Next(models::Batch* batch) = 0;
  virtual void StartEval() = 0;
};

// One hyperparameter line of the log (key and value), between seed and init_stop.
using Hyperparameter = std::pair<std::string, json::Value>;

// One benchmark configured for one invocation: the plan plus everything
// benchmark-specific the loop asks for.
class BenchmarkSetup {
 public:
  virtual ~BenchmarkSetup() = default;
  const RunPlan& plan() const { return plan_; }

  // Every hyperparameter key the benchmark's rules require, in log order.
  virtual std::vector<Hyperparameter> Hyperparameters() const = 0;
  // The model with its starting weights drawn from the run's seed (untimed).
  virtual std::unique_ptr<models::Model> MakeModel(core::Device device, uint64_t seed) const = 0;
  // Then, for a benchmark that starts from a fixed checkpoint (BERT), the
  // weights read from it (the seed still sets everything else: dropout
  // streams). Nothing for the others.
  virtual absl::Status LoadStartingCheckpoint(models::Model&) const { return absl::OkStatus(); }
  virtual train::TrainerConfig TrainerConfig() const = 0;
  // Once per invocation, on rank 0, before any run (untimed): writes the
  // generated data set of a demonstration, or prepares a raw data set into
  // the cache; a no-op for data that is ready to read.
  virtual absl::Status PrepareData() const = 0;
  // Then, still before any model is built: whether the data set is there and
  // complete (files, kinds, counts), so that a bad --data fails in seconds,
  // not after the initialisation.
  virtual absl::Status CheckData() const = 0;
  // Opened after run_start: the data set is first touched on the clock.
  virtual absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                                 int rank) const = 0;
  // The benchmark's part of the package README (recipe, data, labels).
  virtual std::string ReadmeSection() const = 0;

 protected:
  RunPlan plan_;
};

// What the rules fix for a benchmark.
struct BenchmarkInfo {
  std::string name;     // --bench, submission_benchmark and results/<system>/<name>/
  std::string summary;  // one line for --help
  std::string ruleset;  // the training ruleset the logs and package follow
  int required_runs = 0;
  int allowed_missed_runs = 0;  // runs olympic scoring drops that may miss the target
  double target = 0;
  std::string metric;  // for progress lines: "top-1", "mean DICE", ...
  // A run whose metric falls below this is stopped as diverged (0 = never).
  double diverged_below = 0;
  // BERT: train_samples is the number of samples trained, logged just before
  // run_stop (what the RCP check's --rcp_bert_train_samples reads), not a
  // data-set size among the hyperparameters.
  bool train_samples_at_stop = false;
  // Whether the model has attention (its precision is logged as
  // lowest_numerical_precision_in_attn).
  bool attention = false;
};

// The setup's trainer configuration with what its plan adds: dynamic loss
// scaling under fp16, recorded steps with --cuda_graph.
inline train::TrainerConfig TrainerConfigFor(const BenchmarkSetup& setup) {
  train::TrainerConfig config = setup.TrainerConfig();
  config.dynamic_loss_scaling = setup.plan().precision == core::DType::kF16;
  config.cuda_graph = setup.plan().cuda_graph;
  return config;
}

class Benchmark {
 public:
  virtual ~Benchmark() = default;
  virtual const BenchmarkInfo& info() const = 0;
  // The closed recipe for `world_size` processes (the embedded default
  // without --data), fitted to what each process may use. Errors are usage
  // errors.
  virtual absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(
      const RunnerOptions& options, int world_size, const ProcessShare& share) const = 0;
};

}  // namespace mlperf::closed
