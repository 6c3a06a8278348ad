// One seeded closed-division run of any benchmark, from its first MLLOG line
// to run_stop: submission keys, init (model, trainer, warm-up on synthetic
// data, hyperparameters), run_start, then the data pipelines, training
// epochs in blocks up to each evaluation, and the stop at the first
// evaluation that reaches the target.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "benchmarks/benchmark.h"
#include "closed_division/progress.h"
#include "reference/dist/communicator.h"

namespace mlperf::closed {

enum class RunStatus {
  kSuccess,      // reached the target; run_stop status success
  kAborted,      // schedule (or --max_epochs) ended first; run_stop status aborted
  kInterrupted,  // SIGINT/SIGTERM; no run_stop, the log is incomplete
  kFailed,       // an error (data, log write); see `error`
};

struct RunOutcome {
  RunStatus status = RunStatus::kFailed;
  int epochs = 0;  // epochs trained
  double last_metric = 0;
  double seconds = 0;  // run_start to run_stop
  absl::Status error;
};

struct RunRequest {
  int run = 0;           // 0-based index: result_<run>.txt
  uint64_t seed = 0;     // the same on every rank
  std::string log_path;  // written by rank 0 only
  // GPU runs (plan.options.gpus > 0): the communicator on device buffers
  // (NCCL) that averages the gradients, and the cudaStream_t it queues on;
  // `comm` then carries only host-side control messages.
  dist::Communicator* gradient_comm = nullptr;
  ops::Stream comm_stream;
  // Tensor parallelism (plan.tensor_parallel > 1, dist/parallel_groups.h):
  // the ranks that split the model, and the data-parallel ones that share
  // the batches and average each slice's gradients. Null without.
  dist::Communicator* tensor_comm = nullptr;
  dist::Communicator* data_comm = nullptr;
};

RunOutcome RunOnce(const benchmarks::BenchmarkInfo& info, const benchmarks::BenchmarkSetup& setup,
                   const RunRequest& request, dist::Communicator& comm, ProgressReporter& progress);

}  // namespace mlperf::closed
