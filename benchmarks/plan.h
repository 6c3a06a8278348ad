// What a run_closed invocation asks for (the command line) and the plan every
// benchmark fills from it: rules, scale, schedule, data, threads and names.
// The benchmark-specific recipe lives in the benchmark's own setup
// (benchmarks/benchmark.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/json.h"
#include "quality_targets/quality_target.h"
#include "reference/core/dtype.h"

namespace mlperf::benchmarks {

// The command line, validated (closed_division/flags.cc).
struct RunnerOptions {
  std::string benchmark;  // "" = the registry's default
  int gpus = 0;           // per node; 0 = CPU
  int nodes = 1;
  // Ranks each model is split over (tensor parallelism, the decoder LLMs);
  // the processes are that many times the data-parallel ranks.
  int tensor_parallel = 1;
  // A short collective check before the first run (runtime/preflight.h).
  bool preflight = false;
  double preflight_min = 0.5;
  // Seconds in a collective before the peers are checked (0 = never).
  int collective_timeout_s = 60;
  std::string data_dir;  // "" = the benchmark's embedded generated data set
  int runs = 0;          // 0 = the benchmark's required number of runs
  std::string submitter = "mlperf-suite";
  std::string system;  // "" = derived from the configuration
  std::string out_dir = "submissions";
  std::string cache_dir;  // "" = <out>/.cache
  int64_t seed = -1;      // -1 = fresh seeds from /dev/urandom; else run i uses seed + i
  int max_epochs = 0;     // 0 = the whole schedule; else a cap (tests)
  std::string optimizer;  // "" = the benchmark's default
  int threads = 0;        // compute threads per process; 0 = chosen from the cores per process
  // The compute precision of the GEMM-class ops (reference/kernels/precision.h):
  // "fp32", "bf16", "fp16", or "fp8" (bf16 with the transformer blocks'
  // linear layers in FP8, where the benchmark has them: BenchmarkInfo::fp8).
  std::string precision = "fp32";
  // Record each training step as a CUDA graph (TrainerConfig::cuda_graph).
  bool cuda_graph = false;
  // The training ruleset the logs and the package follow; "" = the newest
  // whose round accepts the benchmark.
  std::string ruleset;
  // The benchmark's own flags that were given (BenchmarkInfo::flags), by
  // name, their values as typed ("true" for a bare boolean flag).
  std::map<std::string, std::string> flags;
  // Set by run_benchmark only (a closed run always takes the recipe's):
  // which member of the family ("" = by the data: the full model with
  // --data, the embedded default's without; "full"; "small" = the embedded
  // default's) and the batch per process (0 = the recipe's).
  std::string member;
  int64_t batch_per_rank = 0;
};

// When the run loop trains and evaluates. Training goes in epochs of
// steps_per_epoch optimizer steps; evaluations follow epochs
// first_eval_epoch + k * eval_every_epochs, and the schedule ends at
// last_epoch. Benchmarks that count in samples (3D U-Net from ruleset 3.1)
// log epoch_num as samples: epoch * samples_per_epoch. BERT has no epochs:
// with interval_samples set, "epoch" e is its e-th evaluation interval,
// ending at the first step boundary at or past e * interval_samples, and
// epoch_num is the samples trained by then.
struct Schedule {
  int64_t steps_per_epoch = 0;
  int first_eval_epoch = 1;
  int eval_every_epochs = 1;
  int last_epoch = 1;
  bool log_samples = false;
  int64_t samples_per_epoch = 0;
  int64_t interval_samples = 0;  // > 0: epochs are evaluation intervals (BERT)
  int64_t samples_per_step = 0;  // with interval_samples: the global batch size
  int64_t epoch_samples = 0;     // with interval_samples: > 0 logs epoch_num as a fraction
  // The LLM references' metadata: samples_count (samples trained, logged(e))
  // on every block, epoch and evaluation line instead of epoch numbers.
  bool samples_count = false;
  // With interval_samples: > 1 logs epochs as tokens, samples x this
  // (GPT-3's epoch_num: tokens trained since the starting checkpoint).
  int64_t tokens_per_sample = 1;
  // Whether the intervals are logged as epoch_start/epoch_stop too; false:
  // blocks and evaluations only (the LoRA reference's log, which its
  // oldest ruleset, 4.0.0, needs: there an epoch line needs epoch_num).
  bool epoch_lines = true;
  // Samples trained through each epoch (index 0: none) where the data says
  // (packed rows hold a varying number: DataPipeline::GlobalSamples); the
  // run loop fills it for its run. Empty: steps x samples_per_step.
  std::vector<int64_t> trained;

  bool is_eval_epoch(int epoch) const {
    return epoch >= first_eval_epoch && (epoch - first_eval_epoch) % eval_every_epochs == 0;
  }
  // Optimizer steps from the start of the run to the end of `epoch`.
  int64_t steps_through(int epoch) const {
    if (interval_samples <= 0) return epoch * steps_per_epoch;
    return (epoch * interval_samples + samples_per_step - 1) / samples_per_step;
  }
  int64_t steps_in(int epoch) const { return steps_through(epoch) - steps_through(epoch - 1); }
  // What the logs call epoch `epoch` (epoch_num, first_epoch_num).
  int64_t logged(int epoch) const {
    if (interval_samples > 0 && epoch < static_cast<int>(trained.size()))
      return trained[static_cast<size_t>(epoch)] * tokens_per_sample;
    if (interval_samples > 0) return steps_through(epoch) * samples_per_step * tokens_per_sample;
    return log_samples ? epoch * samples_per_epoch : epoch;
  }
  // epoch_num as the log states it: logged(epoch), or the fraction of an
  // epoch of epoch_samples trained by the end of `epoch`.
  json::Value EpochNum(int epoch) const;
  // The first evaluation epoch at or after `epoch`: schedules end with an evaluation.
  int RoundUpToEval(int epoch) const;
  // The metadata that places a line at the end of `epoch` (at its start for
  // epoch - 1): {epoch_num: EpochNum(epoch)}, or {samples_count: logged(epoch)}.
  json::Object At(int epoch) const;
};

struct RunPlan {
  RunnerOptions options;
  bool demo = false;  // embedded generated data: labelled as a demonstration everywhere
  // The family member: the embedded default's small one (generated or
  // synthetic data) or the benchmark's full size.
  bool small = false;
  // What quality_targets/ says for the benchmark under `ruleset`.
  std::string ruleset;
  quality::QualityTarget target;
  int required_runs = 1;
  int allowed_missed_runs = 0;  // runs olympic scoring drops that may miss the target
  int world_size = 1;           // data-parallel ranks
  int tensor_parallel = 1;      // ranks per model (options.tensor_parallel)
  int64_t global_batch_size = 0;
  int64_t batch_per_rank = 0;  // one micro-batch per rank
  int gradient_accumulation_steps = 1;
  int64_t train_samples = 0;  // 0: not fixed by the rules (BERT)
  int64_t eval_samples = 0;
  Schedule schedule;
  std::string data_root;  // the real data set, or where the generated set lives
  std::string cache_dir;  // --cache_dir, or <out>/.cache: generated and prepared data, indexes
  std::string system_name;
  // For the package's labels: "ImageNet", "ResNet-50".
  std::string data_name;
  std::string model_name;
  // The family member built, e.g. "ResNet-50 v1.5 (224x224, 1000 classes)".
  std::string member_name;
  // Threads per process: the model's OpenMP/BLAS threads and the loader's
  // decode threads. Oversubscribing the cores stalls OpenMP barriers badly.
  int compute_threads = 1;
  int loader_threads = 1;
  // Whether an RCP exists for the batch size (else the package needs
  // --rcp-bypass and says so).
  bool rcp_batch_size = false;
  // options.precision, parsed by CompletePlan (fp8: bf16 and fp8 set).
  core::DType precision = core::DType::kF32;
  bool fp8 = false;
  bool cuda_graph = false;  // options.cuda_graph

  // The last epoch this invocation trains: the schedule's, or --max_epochs.
  int last_epoch() const;
  // Runs this invocation does: --runs, or what a package needs.
  int runs() const { return options.runs > 0 ? options.runs : required_runs; }
  // The processes: every data-parallel rank is a group of tensor-parallel ones.
  int processes() const { return world_size * tensor_parallel; }
};

// What one process may use of its machine: its share of the cores and of
// the memory (0 = unknown, e.g. on a GPU, where nothing is fitted).
struct ProcessShare {
  int cores = 1;
  int64_t memory_bytes = 0;
};

// The part of every plan that does not depend on the benchmark: world size
// (the data-parallel ranks; processes with plan.tensor_parallel) against
// --gpus/--nodes, the per-rank batch, threads, system name and where
// generated data lives (`generated_name`, a folder name under the cache).
// `plan` comes with demo, tensor_parallel, global_batch_size and the
// benchmark's names set.
// Errors are usage errors (exit 2).
absl::Status CompletePlan(const RunnerOptions& options, int world_size, int cores_per_process,
                          const std::string& generated_name, RunPlan& plan);

// Gradient accumulation when one rank's batch does not fit its memory: the
// fewest micro-batches (dividing the rank's batch) for which
// bytes_for_batch(micro-batch) fits memory_bytes; the logged
// gradient_accumulation_steps and model_bn_span follow. ResourceExhausted,
// saying what is needed and what there is, when not even one sample fits.
// Does nothing when memory_bytes is 0.
absl::Status FitMicroBatch(const std::function<int64_t(int64_t)>& bytes_for_batch,
                           int64_t memory_bytes, RunPlan& plan);

// "fp32", "bf16", "fp16" or "fp8" to the compute precision (fp8: bf16, and
// *fp8 set); false for anything else.
bool PrecisionFromName(std::string_view name, core::DType* out, bool* fp8);
// The name of a compute precision as MLPerf's precision keys spell it
// (lowest_numerical_precision_in_*: "fp32", "bfloat16", "fp16", "fp8").
std::string_view MlperfPrecisionName(core::DType precision, bool fp8 = false);

// The package README's paragraph saying that no RCP exists for the plan's
// batch size, so the checkers need --rcp-bypass ("" when one exists).
std::string RcpBypassNote(const RunPlan& plan);

}  // namespace mlperf::benchmarks
