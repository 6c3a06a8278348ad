#include "throughput/config_run.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/dist/parallel_groups.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/trainer/trainer.h"
#include "throughput/timing.h"

namespace mlperf::throughput {
namespace {

// This process's resident-memory high-water mark (VmHWM), in bytes.
int64_t PeakResidentBytes() {
  std::ifstream status("/proc/self/status");
  for (std::string key; status >> key;) {
    if (key == "VmHWM:") {
      int64_t kib = 0;
      status >> kib;
      return kib * 1024;
    }
    status.ignore(1 << 16, '\n');
  }
  return 0;
}

// Every rank's `mine` (count values each), in rank order, on every rank.
std::vector<float> Gather(dist::Communicator& comm, const std::vector<float>& mine) {
  const size_t n = mine.size();
  std::vector<float> all(n * static_cast<size_t>(comm.world_size()), 0.0f);
  std::copy(mine.begin(), mine.end(), all.begin() + static_cast<ptrdiff_t>(n * comm.rank()));
  comm.AllReduceSum(all.data(), static_cast<int64_t>(all.size()));
  return all;
}

// Whether every rank is fine (collective).
bool AllOk(dist::Communicator& comm, bool ok) {
  float failed = ok ? 0.0f : 1.0f;
  comm.AllReduceSum(&failed, 1);
  return failed == 0.0f;
}

}  // namespace

absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> ConfigureFor(
    const benchmarks::Benchmark& benchmark, const BenchOptions& options, const Config& config,
    int world_size, const benchmarks::ProcessShare& share) {
  benchmarks::RunnerOptions r;
  r.benchmark = benchmark.info().name;
  r.gpus = options.gpu ? world_size : 0;
  r.data_dir = options.data == DataMode::kData ? options.data_dir : "";
  r.cache_dir = options.cache_dir;
  r.threads = options.threads;
  r.member = options.size;
  r.batch_per_rank = config.batch;
  r.precision = config.dtype;
  r.cuda_graph = options.cuda_graph;
  r.tensor_parallel = options.tensor_parallel;
  absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> setup =
      benchmark.Configure(r, world_size, share);
  if (!setup.ok()) return setup.status();
  const benchmarks::RunPlan& plan = (*setup)->plan();
  // Batch 0 asks for the recipe's own batch.
  if (plan.gradient_accumulation_steps > 1 ||
      (config.batch > 0 && plan.batch_per_rank != config.batch)) {
    return absl::ResourceExhaustedError(fmt::format(
        "batch {} per process does not fit a process's {:.1f} GiB without gradient "
        "accumulation; measure smaller batches or use fewer processes per node",
        config.batch > 0 ? config.batch : plan.batch_per_rank * plan.gradient_accumulation_steps,
        static_cast<double>(share.memory_bytes) / (1 << 30)));
  }
  if (options.data != DataMode::kSynthetic) {
    const bool train = options.mode == Mode::kTrain;
    const int64_t samples = train ? plan.train_samples : plan.eval_samples / plan.world_size;
    const int64_t per_step = train ? plan.global_batch_size : plan.batch_per_rank;
    const int64_t available = samples / per_step;
    const int needed = train ? options.iters : std::max(options.iters, options.warmup);
    if (needed > available) {
      return absl::InvalidArgumentError(fmt::format(
          "--iters={}{}: the data has {} full batches of {} per {} ({} samples); measure fewer "
          "steps or use --synthetic",
          options.iters, train ? "" : fmt::format(" --warmup={}", options.warmup), available,
          per_step, train ? "epoch" : "evaluation pass on a process",
          train ? plan.train_samples : plan.eval_samples));
    }
  }
  return setup;
}

ConfigResult RunConfig(const benchmarks::Benchmark& benchmark, const BenchOptions& options,
                       const Config& config, const runtime::RunComms& comms,
                       const benchmarks::ProcessShare& share) {
  dist::Communicator& control = *comms.control;
  const int world = control.world_size(), rank = control.rank();
  ConfigResult result;
  result.config = config;
  const auto fail = [&](const absl::Status& status) {
    result.error = status.ok() ? "another process failed" : std::string(status.message());
    return result;
  };

  absl::StatusOr<std::unique_ptr<benchmarks::BenchmarkSetup>> setup =
      ConfigureFor(benchmark, options, config, world, share);
  if (!AllOk(control, setup.ok())) return fail(setup.status());
  const benchmarks::RunPlan& plan = (*setup)->plan();
  const ops::PrecisionScope precision(plan.precision, plan.fp8);
  const bool synthetic = options.data == DataMode::kSynthetic;
  // Synthetic data needs no loader: every core of the process computes.
  ops::SetHostThreads(synthetic && !options.gpu
                          ? (options.threads > 0 ? options.threads : share.cores)
                          : plan.compute_threads);
  ops::SetHostCopyThreads(share.cores);
  const bool train = options.mode == Mode::kTrain;
  dist::Communicator& model_comm = comms.gradients != nullptr ? *comms.gradients : control;
  // Tensor parallelism: groups of ranks split the model; the data-parallel
  // ranks average the gradients and share the batches out.
  std::optional<dist::ParallelGroups> groups;
  if (plan.tensor_parallel > 1) {
    absl::StatusOr<dist::ParallelGroups> split =
        dist::ParallelGroups::Split(control, plan.tensor_parallel);
    if (!AllOk(control, split.ok())) return fail(split.status());
    groups = std::move(*split);
  }
  dist::Communicator& data_comm = groups ? groups->data() : model_comm;
  std::unique_ptr<models::Model> model =
      (*setup)->MakeModel({.device = options.gpu ? core::Device::kCuda : core::Device::kCpu,
                           .rank = rank,
                           .world_size = world,
                           .comm = &model_comm,
                           .tensor_rank = groups ? groups->tensor().rank() : 0,
                           .tensor_size = plan.tensor_parallel,
                           .tensor_comm = groups ? &groups->tensor() : nullptr},
                          /*seed=*/1);
  std::optional<train::Trainer> trainer;
  if (train) {
    trainer.emplace(*model, (*setup)->MakeOptimizerFor(*model, data_comm), (*setup)->MakeSchedule(),
                    benchmarks::TrainerConfigFor(plan), data_comm, comms.stream);
  }

  // Synthetic: one batch in host memory; training uploads it once and then
  // reuses it on the device (an input-less batch), inference uploads it for
  // every batch, as a server would.
  models::OwnedBatch synthetic_batch;
  if (synthetic) synthetic_batch = model->SyntheticBatch();
  std::unique_ptr<benchmarks::DataPipeline> pipeline;
  absl::Status data_status;
  if (!synthetic) {
    absl::StatusOr<std::unique_ptr<benchmarks::DataPipeline>> opened =
        (*setup)->OpenData(train ? benchmarks::Split::kTrain : benchmarks::Split::kEval, 1,
                           groups ? groups->data().rank() : rank);
    if (opened.ok()) pipeline = std::move(*opened);
    data_status = opened.status();
  }
  if (!AllOk(control, data_status.ok())) return fail(data_status);

  bool uploaded = false;
  models::Batch batch;
  const auto next_batch = [&]() -> const models::Batch& {
    if (synthetic) {
      if (train && uploaded) {
        batch = models::Batch{.inputs = {}, .count = synthetic_batch.batch.count};
        return batch;
      }
      uploaded = true;
      return synthetic_batch.batch;
    }
    if (data_status.ok()) {
      absl::StatusOr<bool> got = pipeline->Next(&batch);
      if (!got.ok()) {
        data_status = got.status();
      } else if (!*got) {
        data_status = absl::OutOfRangeError("the data ran out during the measurement");
      }
    }
    return batch;
  };
  TimingHooks hooks;
  hooks.step = [&] {
    const models::Batch& b = next_batch();
    if (!data_status.ok()) return;  // nothing to compute; reported after the windows
    if (train) {
      trainer->TrainStep(b);
    } else {
      model->EvaluateBatch(b);
    }
  };
  if (world > 1) hooks.meet = [&] { control.Barrier(); };
  hooks.now = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  if (!train && pipeline != nullptr) hooks.start_window = [&] { pipeline->StartEval(); };
  const double unix_start =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const double steady_start = hooks.now();
  const std::vector<Window> windows =
      TimeWindows(hooks, options.warmup, options.iters, options.repeats);
  if (!AllOk(control, data_status.ok())) return fail(data_status);

  // Rank 0 learns every rank's steps, the slowest rank's window times and
  // the largest memory high-water mark.
  std::vector<float> mine;
  for (const Window& w : windows)
    for (double s : w.step_seconds) mine.push_back(static_cast<float>(s));
  const std::vector<float> steps = Gather(control, mine);
  std::vector<float> window_seconds;
  for (const Window& w : windows) window_seconds.push_back(static_cast<float>(w.seconds));
  const std::vector<float> all_windows = Gather(control, window_seconds);
  const int64_t memory = options.gpu ? ops::DeviceMemoryInUseBytes() : PeakResidentBytes();
  const std::vector<float> memories =
      Gather(control, {static_cast<float>(static_cast<double>(memory) / 1024.0)});

  const size_t per_rank = mine.size();
  for (int r = 0; r < world; ++r) {
    result.step_seconds.emplace_back(steps.begin() + static_cast<ptrdiff_t>(per_rank * r),
                                     steps.begin() + static_cast<ptrdiff_t>(per_rank * (r + 1)));
  }
  for (size_t w = 0; w < windows.size(); ++w) {
    double slowest = 0;
    for (int r = 0; r < world; ++r)
      slowest = std::max(slowest, static_cast<double>(all_windows[r * windows.size() + w]));
    result.window_seconds.push_back(slowest);
    result.window_start_unix.push_back(unix_start + (windows[w].start - steady_start));
  }
  // A tensor-parallel group trains one batch among its ranks.
  result.samples_per_window = int64_t{options.iters} * config.batch * plan.world_size;
  result.peak_memory_bytes =
      static_cast<int64_t>(*std::max_element(memories.begin(), memories.end()) * 1024.0);
  result.memory_kind = options.gpu ? "device memory in use after the measurement (max over GPUs)"
                                   : "peak resident memory of a process (max over processes)";
  result.ok = true;
  return result;
}

}  // namespace mlperf::throughput
