#include "benchmarks/plan.h"

#include <algorithm>
#include <filesystem>

#include "absl/status/status.h"
#include "fmt/format.h"
#include "logging/mllog_keys.h"

namespace mlperf::benchmarks {

json::Value Schedule::EpochNum(int epoch) const {
  if (interval_samples > 0 && epoch_samples > 0) {
    return static_cast<double>(steps_through(epoch) * samples_per_step) /
           static_cast<double>(epoch_samples);
  }
  return logged(epoch);
}

json::Object Schedule::At(int epoch) const {
  if (samples_count) return {{std::string(mllog::meta::kSamplesCount), logged(epoch)}};
  return {{std::string(mllog::meta::kEpochNum), EpochNum(epoch)}};
}

int Schedule::RoundUpToEval(int epoch) const {
  int last = first_eval_epoch;
  while (last < epoch) last += eval_every_epochs;
  return last;
}

int RunPlan::last_epoch() const {
  return options.max_epochs > 0 ? std::min(options.max_epochs, schedule.last_epoch)
                                : schedule.last_epoch;
}

absl::Status CompletePlan(const RunnerOptions& options, int world_size, int cores_per_process,
                          const std::string& generated_name, RunPlan& plan) {
  const int accelerators = options.gpus * options.nodes;
  const int processes = world_size * plan.tensor_parallel;
  if (options.gpus > 0 && accelerators != processes) {
    return absl::InvalidArgumentError(fmt::format(
        "--gpus={} --nodes={} means {} processes (one per GPU), but {} were launched; start "
        "with mpirun -np {} or srun --ntasks={}",
        options.gpus, options.nodes, accelerators, processes, accelerators, accelerators));
  }
  if (options.gpus == 0 && options.nodes > processes) {
    return absl::InvalidArgumentError(fmt::format(
        "--nodes={} but {} process(es) were launched; every node runs at least one (start with "
        "mpirun or srun across the nodes)",
        options.nodes, processes));
  }
  const int64_t split = int64_t{world_size} * plan.gradient_accumulation_steps;
  if (plan.global_batch_size % split != 0) {
    return absl::InvalidArgumentError(
        fmt::format("global batch size {} does not split over {} {}; launch a divisor of it",
                    plan.global_batch_size, world_size,
                    plan.tensor_parallel > 1 ? "data-parallel ranks" : "processes"));
  }
  plan.world_size = world_size;
  plan.batch_per_rank = plan.global_batch_size / split;
  plan.cache_dir = options.cache_dir.empty()
                       ? (std::filesystem::path(options.out_dir) / ".cache").string()
                       : options.cache_dir;
  if (plan.demo) {
    plan.data_root = (std::filesystem::path(plan.cache_dir) / generated_name).string();
    if (plan.system_name.empty())
      plan.system_name = options.gpus > 0 ? "gpu-demo-generated-data" : "cpu-demo-generated-data";
  } else {
    plan.data_root = options.data_dir;
    plan.system_name = options.gpus > 0
                           ? fmt::format("{}xnode-{}xgpu", options.nodes, options.gpus)
                           : fmt::format("{}xnode-cpu-{}proc", options.nodes, processes);
  }
  // A small demo model trains fastest on one thread next to one decode
  // thread; real data needs about as many decode threads as the model.
  const int cores = std::max(1, cores_per_process);
  if (plan.demo) {
    plan.compute_threads = cores <= 2 ? 1 : cores - 1;
    plan.loader_threads = 1;
  } else {
    plan.compute_threads = std::max(1, cores / 2);
    plan.loader_threads = std::max(1, cores - plan.compute_threads);
  }
  if (options.gpus > 0) {
    // The GPU computes; the host thread only queues kernels, so the cores
    // go to decoding and augmentation.
    plan.compute_threads = 1;
    plan.loader_threads = std::max(1, cores - 1);
  }
  if (options.threads > 0) plan.compute_threads = options.threads;
  if (!PrecisionFromName(options.precision, &plan.precision, &plan.fp8)) {
    return absl::InvalidArgumentError(
        fmt::format("precision {}: expected fp32, bf16, fp16 or fp8", options.precision));
  }
  plan.cuda_graph = options.cuda_graph;
  if (!options.system.empty()) {
    plan.system_name = options.system;
    // A demonstration package must never pass for a real result.
    if (plan.demo && plan.system_name.find("demo") == std::string::npos)
      plan.system_name += "-demo-generated-data";
  }
  return absl::OkStatus();
}

absl::Status FitMicroBatch(const std::function<int64_t(int64_t)>& bytes_for_batch,
                           int64_t memory_bytes, RunPlan& plan) {
  if (memory_bytes <= 0) return absl::OkStatus();
  const int64_t per_rank = plan.batch_per_rank * plan.gradient_accumulation_steps;
  for (int64_t steps = 1; steps <= per_rank; ++steps) {
    if (per_rank % steps != 0 || bytes_for_batch(per_rank / steps) > memory_bytes) continue;
    plan.gradient_accumulation_steps = static_cast<int>(steps);
    plan.batch_per_rank = per_rank / steps;
    return absl::OkStatus();
  }
  return absl::ResourceExhaustedError(fmt::format(
      "one sample needs {:.1f} GiB but a process has {:.1f} GiB; use a machine with more memory "
      "or fewer processes per node",
      static_cast<double>(bytes_for_batch(1)) / (1 << 30),
      static_cast<double>(memory_bytes) / (1 << 30)));
}

bool PrecisionFromName(std::string_view name, core::DType* out, bool* fp8) {
  *fp8 = name == "fp8";
  if (name == "fp32")
    *out = core::DType::kF32;
  else if (name == "bf16" || name == "fp8")
    *out = core::DType::kBF16;
  else if (name == "fp16")
    *out = core::DType::kF16;
  else
    return false;
  return true;
}

std::string_view MlperfPrecisionName(core::DType precision, bool fp8) {
  if (fp8) return "fp8";
  switch (precision) {
    case core::DType::kBF16:
      return "bfloat16";
    case core::DType::kF16:
      return "fp16";
    default:
      return "fp32";
  }
}

std::string RcpBypassNote(const RunPlan& plan) {
  if (plan.rcp_batch_size) return "";
  return fmt::format(
      "No Reference Convergence Point exists for this configuration (global batch size {}{}), "
      "so the\npackage checkers need the RCP bypass (`--rcp-bypass`).\n\n",
      plan.global_batch_size, plan.demo ? ", generated data" : "");
}

}  // namespace mlperf::benchmarks
