// A benchmark as run_closed and run_benchmark see it. A benchmark is a folder
// (benchmarks/<name>/): a registry entry (Benchmark: what its reference
// fixes, and how to configure it for a scale) that configures a
// BenchmarkSetup for one invocation, with the model, the optimizer and
// learning-rate schedule, the evaluator and the data pipelines. Its ruleset,
// quality target and run count come from quality_targets/. The run loop,
// the trainer and the package writer know no benchmark by name.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "benchmarks/plan.h"
#include "reference/core/tensor.h"
#include "reference/eval/evaluator.h"
#include "reference/models/model.h"
#include "reference/optim/optimizer.h"
#include "reference/optim/schedules.h"
#include "reference/trainer/trainer.h"

namespace mlperf::benchmarks {

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
  // Training: the samples in global batches [first, first + n) over all
  // ranks, where batches hold a varying number (packed rows); -1 where
  // every global batch holds global_batch_size / accumulation steps.
  virtual int64_t GlobalSamples(int64_t /*first*/, int64_t /*n*/) const { return -1; }
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
  // The model with its starting weights drawn from the run's seed (untimed),
  // where `placement` says (a model with sharded parameters takes its rows
  // from it).
  virtual std::unique_ptr<models::Model> MakeModel(const models::Placement& placement,
                                                   uint64_t seed) const = 0;
  // Then, for a benchmark that starts from a fixed checkpoint (BERT), the
  // weights read from it (the seed still sets everything else: dropout
  // streams). Nothing for the others.
  virtual absl::Status LoadStartingCheckpoint(models::Model&) const { return absl::OkStatus(); }
  // The recipe's optimizer over the model's trainable parameters, and its
  // learning-rate schedule.
  virtual std::unique_ptr<optim::Optimizer> MakeOptimizer(const models::Model& model) const = 0;
  // The optimizer as the trainer over `data_comm`'s data-parallel ranks
  // runs it: MakeOptimizer's, unless the reference splits the optimizer
  // state over those ranks (the LLMs' distributed optimizer).
  virtual std::unique_ptr<optim::Optimizer> MakeOptimizerFor(const models::Model& model,
                                                             dist::Communicator&) const {
    return MakeOptimizer(model);
  }
  virtual std::unique_ptr<optim::LearningRateSchedule> MakeSchedule() const = 0;
  // How an evaluation pass becomes the metric; by default the ratio of the
  // sums the model's EvaluateBatch returns.
  virtual std::unique_ptr<eval::Evaluator> MakeEvaluator(models::Model& model) const {
    return std::make_unique<eval::RatioEvaluator>(model);
  }
  // Once per invocation, on rank 0, before any run (untimed): writes the
  // generated data set of a demonstration, or prepares a raw data set into
  // the cache; a no-op for data that is ready to read.
  virtual absl::Status PrepareData() const = 0;
  // Then, still before any model is built: whether the data set is there and
  // complete (files, kinds, counts), so that a bad --data fails in seconds,
  // not after the initialisation.
  virtual absl::Status CheckData() const = 0;
  // Then on every process, before its runs (untimed): what each needs to
  // read the checked data (BERT's packing of its samples); errors are the
  // data's.
  virtual absl::Status PrepareProcess() const { return absl::OkStatus(); }
  // Opened after run_start: the data set is first touched on the clock.
  virtual absl::StatusOr<std::unique_ptr<DataPipeline>> OpenData(Split split, uint64_t seed,
                                                                 int rank) const = 0;
  // The benchmark's part of the package README (recipe, data, labels).
  virtual std::string ReadmeSection() const = 0;
  // On every rank after run `run`'s run_stop (untimed): what the benchmark
  // keeps of the trained model, e.g. the LoRA adapters; nothing by default.
  // `data_rank`: this process's data-parallel rank.
  virtual absl::Status AfterRun(const models::Model&, int /*run*/, int /*data_rank*/) const {
    return absl::OkStatus();
  }

 protected:
  RunPlan plan_;
};

// The trainer settings every setup's plan implies: its accumulation,
// dynamic loss scaling under fp16, recorded steps with --cuda_graph.
train::TrainerConfig TrainerConfigFor(const RunPlan& plan);

// What a benchmark's reference fixes, beside what quality_targets/ holds.
struct BenchmarkInfo {
  // --bench, submission_benchmark, results/<system>/<name>/, and the name its
  // rules, RCPs and scoring go by in quality_targets/.
  std::string name;
  std::string summary;  // one line for --help
  std::string metric;   // for progress lines: "top-1", "mean DICE", ...
  // A run whose metric falls below this is stopped as diverged (0 = never).
  double diverged_below = 0;
  // BERT: train_samples is the number of samples trained, logged just before
  // run_stop (what the RCP check's --rcp_bert_train_samples reads), not a
  // data-set size among the hyperparameters.
  bool train_samples_at_stop = false;
  // Whether the model has attention (its precision is logged as
  // lowest_numerical_precision_in_attn).
  bool attention = false;
  // Whether its model splits over tensor-parallel ranks (--tensor_parallel).
  bool tensor_parallel = false;
  // Whether its model has FP8 linear layers (--precision fp8).
  bool fp8 = false;
  // The benchmark --bench means when it is not given.
  bool is_default = false;
  // Flags of its own on run_closed's command line: ABSL_FLAG definitions in
  // its folder, listed here; their values reach it in RunnerOptions::flags.
  std::vector<std::string> flags;
  // Only for a benchmark MLPerf does not define (a test's toy): what
  // quality_targets/ says for the others.
  struct OwnRules {
    std::string ruleset;
    std::string target;  // as a rule file states one, "v <= 0.3 and v > 0.0"
    int required_runs = 1;
    int allowed_missed_runs = 0;
  };
  std::optional<OwnRules> own_rules;
};

// The ruleset (options.ruleset, or the newest whose round accepts the
// benchmark), its quality target and the run counts into `plan`: from
// quality_targets/ for a benchmark MLPerf defines, from OwnRules for one it
// does not. Errors are usage errors.
absl::Status ReadRules(const BenchmarkInfo& info, const RunnerOptions& options, RunPlan& plan);

class Benchmark {
 public:
  virtual ~Benchmark() = default;
  virtual const BenchmarkInfo& info() const = 0;
  // The closed recipe for `world_size` processes (the embedded default
  // without --data), fitted to what each process may use: the part every
  // benchmark shares (the rules, the flags, the family member, the
  // processes as groups of options.tensor_parallel), then ConfigureFor with
  // the data-parallel ranks. Errors are usage errors.
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> Configure(const RunnerOptions& options,
                                                            int world_size,
                                                            const ProcessShare& share) const;

 protected:
  // `plan` comes with options, demo, small, tensor_parallel and the rules
  // set; `world_size` is the data-parallel ranks.
  virtual absl::StatusOr<std::unique_ptr<BenchmarkSetup>> ConfigureFor(
      RunPlan plan, int world_size, const ProcessShare& share) const = 0;
};

}  // namespace mlperf::benchmarks
