#include "closed_division/run_benchmark.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "base/exit_codes.h"
#include "base/file_lock.h"
#include "base/files.h"
#include "benchmarks/prepare_data.h"
#include "closed_division/package.h"
#include "closed_division/progress.h"
#include "closed_division/run_loop.h"
#include "closed_division/seeds.h"
#include "fmt/format.h"
#include "reference/dist/parallel_groups.h"
#include "reference/kernels/dispatch.h"
#include "runtime/interrupt.h"
#include "runtime/system_info.h"

namespace mlperf::closed {
namespace {

namespace fs = std::filesystem;
using benchmarks::Benchmark;
using benchmarks::BenchmarkInfo;
using benchmarks::BenchmarkSetup;
using benchmarks::RunnerOptions;
using benchmarks::RunPlan;

class Reporter {
 public:
  explicit Reporter(const dist::Communicator& comm)
      : rank_(comm.rank()), distributed_(comm.world_size() > 1) {}
  // Errors are printed by whichever rank hits them.
  void Error(const std::string& message) const {
    std::fprintf(stderr, "run_closed: %s%s\n",
                 distributed_ ? fmt::format("[rank {}] ", rank_).c_str() : "", message.c_str());
  }
  // Everything else by rank 0 only.
  void Info(const std::string& message) const {
    if (rank_ == 0) std::fprintf(stderr, "run_closed: %s\n", message.c_str());
  }

 private:
  int rank_;
  bool distributed_;
};

std::string PackageReadme(const BenchmarkSetup& setup, const std::string& org_dir) {
  const RunPlan& plan = setup.plan();
  // Reduced precisions are emulated (fp32 storage, rounded values): said
  // wherever the package is read.
  const std::string precision =
      plan.precision == core::DType::kF32
          ? std::string()
          : fmt::format(
                "Precision: {} at the convolutions, linear layers and attention products "
                "(rounded inputs and outputs, fp32 accumulation{}); fp32 master weights, "
                "optimizer, norms and losses. The rounding is emulated on fp32 storage.{}\n\n",
                plan.fp8 ? "bf16" : plan.options.precision,
                plan.precision == core::DType::kF16 ? ", dynamic loss scaling" : "",
                plan.fp8 ? " The transformer blocks' linear layers multiply FP8 (E4M3 inputs "
                           "and weights, E5M2 gradients, delayed per-tensor scaling)."
                         : "");
  return setup.ReadmeSection() + precision + "Check with:\n\n```sh\n" +
         CheckCommands(plan, org_dir) + "```\n";
}

// Where rank 0 of the invocation writing this package holds its lock: beside
// the package, never inside it (the checkers see only the package).
fs::path PackageLockPath(const RunnerOptions& options, const RunPlan& plan,
                         const std::string& benchmark) {
  return fs::path(options.out_dir) /
         fmt::format(".run_closed-{}-{}-{}.lock", options.submitter, plan.system_name, benchmark);
}

// What rank 0 created before the package is written: removed again when the
// invocation is refused, so that a refusal leaves nothing behind.
struct Created {
  fs::path first_folder;  // the outermost folder of --out this invocation made
  fs::path lock;
  void Undo(std::optional<base::FileLock>& package_lock, const fs::path& out) const {
    std::error_code ec;
    if (!lock.empty()) fs::remove(lock, ec);
    package_lock.reset();
    if (first_folder.empty()) return;
    for (fs::path p = fs::absolute(out, ec); !p.empty(); p = p.parent_path()) {
      if (!fs::remove(p, ec) || p == first_folder) break;  // stops at a folder not empty
    }
  }
};

// Rank 0 locks the package (a second invocation into it is refused, naming
// the process that writes it) and checks that nothing would be overwritten;
// then the data is made sure of (a generated set is written once into the
// cache, while other invocations wait for it) and checked; only then is the
// package frame written. A refusal at any step undoes what rank 0 created.
int PreparePackageAndData(const BenchmarkInfo& info, const BenchmarkSetup& setup,
                          const PackagePaths& paths, dist::Communicator& comm,
                          const Reporter& report, std::optional<base::FileLock>& package_lock) {
  const RunPlan& plan = setup.plan();
  const std::string system_json = runtime::SystemDescriptionJson(plan);
  const fs::path out = plan.options.out_dir;
  Created created;
  absl::Status status;
  if (comm.rank() == 0) {
    std::error_code ec;
    if (!plan.demo) {
      if (!fs::is_directory(plan.options.data_dir, ec)) {
        status = absl::NotFoundError(fmt::format("--data={}: {}", plan.options.data_dir,
                                                 ec ? ec.message() : "no such folder"));
      } else if (base::IsWithin(out, plan.options.data_dir)) {
        status = absl::InvalidArgumentError(
            fmt::format("--out={}: lies inside --data={}; write the package elsewhere",
                        out.string(), plan.options.data_dir));
      }
    }
    for (fs::path p = fs::absolute(out, ec); status.ok() && !p.empty() && !fs::exists(p, ec);
         p = p.parent_path()) {
      created.first_folder = p;
      if (p == p.parent_path()) break;
    }
    if (status.ok()) fs::create_directories(out, ec);
    if (status.ok() && ec)
      status = absl::PermissionDeniedError(fmt::format("--out={}: {}", out.string(), ec.message()));
    if (status.ok()) {
      const fs::path lock_path = PackageLockPath(plan.options, plan, info.name);
      const bool lock_existed = fs::exists(lock_path, ec);
      absl::StatusOr<base::FileLock> lock = base::FileLock::TryAcquire(lock_path);
      if (lock.ok()) {
        package_lock.emplace(std::move(*lock));
        if (!lock_existed) created.lock = lock_path;
      } else {
        status = absl::FailedPreconditionError(
            fmt::format("{} is being written by another run_closed ({})", paths.result_dir.string(),
                        std::string(lock.status().message())));
      }
    }
    if (status.ok()) status = CheckNothingToOverwrite(paths, system_json);
  }
  // The data set is written or prepared, then checked, before any model is
  // built. A generated set that cannot be written is a failed run; a raw set
  // that cannot be prepared, or data that is incomplete, is bad input.
  int refusal = kExitUsage;
  if (comm.rank() == 0 && status.ok()) {
    status = PrepareDataOnce(setup, [&](const std::string& m) { report.Info(m); });
    if (!status.ok() && plan.demo) refusal = kExitFailed;
    if (status.ok()) status = setup.CheckData();
    if (status.ok()) status = PreparePackage(paths, system_json, PackageReadme(setup, "."));
  }
  if (comm.rank() == 0 && !status.ok()) {
    report.Error(std::string(status.message()));
    created.Undo(package_lock, out);
  }
  float code = status.ok() ? 0.0f : static_cast<float>(refusal);
  comm.Broadcast(&code, 1, 0);
  if (code != 0.0f) return static_cast<int>(code);
  // Every process, from the checked data; any failure ends them all.
  const absl::Status prepared = setup.PrepareProcess();
  if (!prepared.ok() && comm.rank() == 0) report.Error(std::string(prepared.message()));
  if (!prepared.ok() && comm.rank() != 0) {
    std::fprintf(stderr, "run_closed: [rank %d] %s\n", comm.rank(),
                 std::string(prepared.message()).c_str());
  }
  float failed = prepared.ok() ? 0.0f : 1.0f;
  comm.AllReduceSum(&failed, 1);
  if (failed != 0.0f && comm.rank() == 0) created.Undo(package_lock, out);
  return failed != 0.0f ? kExitUsage : 0;
}

}  // namespace

std::string CheckCommands(const RunPlan& plan, const std::string& org_dir) {
  const char* bypass = plan.rcp_batch_size ? "" : " --rcp-bypass";
  return fmt::format(
      "  compliance_check --ruleset {0}{1} {2}\n"
      "  python3 -m mlperf_logging.package_checker {2} training {0}{1}\n",
      plan.ruleset, bypass, org_dir);
}

int RunBenchmark(const Benchmark& benchmark, const RunnerOptions& options,
                 const runtime::RunComms& comms, const benchmarks::ProcessShare& share) {
  dist::Communicator& comm = *comms.control;
  const Reporter report(comm);
  const BenchmarkInfo& info = benchmark.info();
  absl::StatusOr<std::unique_ptr<BenchmarkSetup>> configured =
      benchmark.Configure(options, comm.world_size(), share);
  if (!configured.ok()) {
    report.Info(std::string(configured.status().message()));
    return kExitUsage;
  }
  const BenchmarkSetup& setup = **configured;
  const RunPlan& plan = setup.plan();
  std::optional<dist::ParallelGroups> groups;
  if (plan.tensor_parallel > 1) {
    absl::StatusOr<dist::ParallelGroups> split =
        dist::ParallelGroups::Split(comm, plan.tensor_parallel);
    if (!split.ok()) {
      report.Info(std::string(split.status().message()));
      return kExitUsage;
    }
    groups = std::move(*split);
  }
  const int runs = plan.runs();
  const PackagePaths paths =
      MakePackagePaths(options.out_dir, options.submitter, plan.system_name, info.name);
  std::optional<base::FileLock> package_lock;  // held until the invocation ends
  if (int code = PreparePackageAndData(info, setup, paths, comm, report, package_lock);
      code != kExitOk)
    return code;

  ops::SetHostThreads(plan.compute_threads);
  ops::SetHostCopyThreads(plan.compute_threads + plan.loader_threads);
  runtime::InstallInterruptHandlers();
  ProgressReporter progress(runs, plan.last_epoch(), plan.target, info.metric,
                            comm.rank() == 0 ? stderr : nullptr);
  report.Info(fmt::format("{} run(s) of {} on {}, {} process(es){}, ruleset {}; package {}", runs,
                          plan.demo ? "the demonstration on generated data" : plan.model_name,
                          runtime::SystemSummary(options.gpus), comm.world_size(),
                          groups.has_value()
                              ? fmt::format(" (tensor parallel {} x data parallel {})",
                                            plan.tensor_parallel, plan.world_size)
                              : "",
                          plan.ruleset, paths.org.string()));
  // A recorded step is one micro-batch (train::TrainerConfig::cuda_graph).
  if (plan.cuda_graph && plan.gradient_accumulation_steps > 1) {
    report.Info(fmt::format(
        "--cuda_graph: the steps run as queued, not recorded ({} micro-batches per step)",
        plan.gradient_accumulation_steps));
  }
  std::vector<uint64_t> seeds;
  int missed = 0;
  for (int run = 0; run < runs; ++run) {
    absl::StatusOr<uint64_t> seed = NextRunSeed(options.seed, run, seeds, comm);
    if (!seed.ok()) {
      report.Error(std::string(seed.status().message()));
      return kExitFailed;
    }
    seeds.push_back(*seed);
    const RunOutcome outcome = RunOnce(info, setup,
                                       {.run = run,
                                        .seed = *seed,
                                        .log_path = paths.Incomplete(run).string(),
                                        .gradient_comm = comms.gradients,
                                        .comm_stream = comms.stream,
                                        .tensor_comm = groups ? &groups->tensor() : nullptr,
                                        .data_comm = groups ? &groups->data() : nullptr},
                                       comm, progress);
    if (outcome.status == RunStatus::kInterrupted) {
      report.Info(fmt::format(
          "interrupted during run {}: {} finished run(s) kept in {}; the unfinished log is {}",
          run + 1, run, paths.result_dir.string(), paths.Incomplete(run).string()));
      return kExitFailed;
    }
    if (outcome.status == RunStatus::kFailed) {
      report.Error(fmt::format("run {} failed: {} (log left as {})", run + 1,
                               std::string(outcome.error.message()),
                               paths.Incomplete(run).string()));
      return kExitFailed;
    }
    if (outcome.status == RunStatus::kAborted) ++missed;
    if (comm.rank() == 0) {
      if (absl::Status s = CommitResult(paths, run); !s.ok()) {
        report.Error(std::string(s.message()));
        return kExitFailed;
      }
    }
  }
  comm.Barrier();
  report.Info(fmt::format("package: {} ({} run(s), {} reached the target)", paths.org.string(),
                          runs, runs - missed));
  if (comm.rank() == 0) {
    std::fprintf(stderr, "Check it with:\n%s", CheckCommands(plan, paths.org.string()).c_str());
    if (plan.demo) {
      std::fprintf(stderr,
                   "(--rcp-bypass: no RCP describes the demonstration's own recipe on generated "
                   "data, so the RCP check cannot pass without it)\n");
    } else if (!plan.rcp_batch_size) {
      std::fprintf(stderr,
                   "(--rcp-bypass: no RCP exists for global batch size %lld, so the RCP check "
                   "cannot pass without it)\n",
                   static_cast<long long>(plan.global_batch_size));
    }
  }
  // Olympic scoring tolerates a few runs that missed the target.
  if (missed > plan.allowed_missed_runs) {
    report.Info(fmt::format("{} runs missed the target: the package will not pass", missed));
    return kExitFailed;
  }
  return kExitOk;
}

}  // namespace mlperf::closed
