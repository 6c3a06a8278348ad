// run_closed: runs a closed-division MLPerf Training benchmark the required
// number of times and writes a submission package. See docs/run_closed.md.
//
// Exit codes: 0 runs done; 1 a run or write failed, the invocation was
// interrupted, or more runs missed the target than olympic scoring allows;
// 2 usage or input error (bad flag, existing results, missing data).

#include <omp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "closed_division/config.h"
#include "closed_division/flags.h"
#include "closed_division/host_staged_comm.h"
#include "closed_division/interrupt.h"
#include "closed_division/package.h"
#include "closed_division/progress.h"
#include "closed_division/readme.h"
#include "closed_division/resnet_run.h"
#include "closed_division/seeds.h"
#include "closed_division/system_info.h"
#include "datasets/synthetic_image_set.h"
#include "fmt/format.h"
#include "reference/dist/communicator.h"
#include "reference/dist/launch_env.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/kernels/dispatch.h"
#ifdef MLPERF_HAVE_NCCL
#include "reference/dist/nccl_communicator.h"
#endif

extern "C" void openblas_set_num_threads(int threads);

namespace {

namespace closed = mlperf::closed;
namespace fs = std::filesystem;

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// This machine's cores shared among the processes launched on it.
int CoresPerProcess() {
  int local = 1;
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = std::getenv(name); v != nullptr && std::atoi(v) > 0) {
      local = std::atoi(v);
      break;
    }
  }
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
}

class Reporter {
 public:
  explicit Reporter(const mlperf::dist::Communicator& comm)
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

// The stream NCCL queues on, created only for GPU runs.
class GpuStream {
 public:
  GpuStream() = default;
  GpuStream(const GpuStream&) = delete;
  GpuStream& operator=(const GpuStream&) = delete;
  ~GpuStream() { mlperf::ops::DestroyStream(stream_); }
  void Create() { stream_ = mlperf::ops::CreateStream(); }
  void* get() const { return stream_; }

 private:
  void* stream_ = nullptr;
};

// GPU runs: NCCL for the gradients (device buffers) and a host-staged view of
// it for the control messages. Under mpirun the NCCL id travels over MPI;
// under torchrun-style variables (MASTER_ADDR/MASTER_PORT) or for a single
// process, over the TCP rendezvous.
struct GpuComms {
  std::unique_ptr<mlperf::dist::Communicator> device, host;
};

absl::StatusOr<GpuComms> MakeGpuComms(const mlperf::dist::LaunchEnv& launch, GpuStream& stream) {
#ifdef MLPERF_HAVE_NCCL
  if (!mlperf::ops::CudaAvailable())
    return absl::FailedPreconditionError("no CUDA device is visible to this process");
  // NCCL picks the device (local rank); the stream must be created on it.
  absl::StatusOr<std::unique_ptr<mlperf::dist::Communicator>> nccl;
  const bool rendezvous = launch.world_size == 1 || std::getenv("MASTER_ADDR") != nullptr;
  mlperf::dist::NcclOptions nccl_options;
  // The same choice the communicator makes (local rank modulo the devices),
  // made first so that the stream and the ops context live on that device.
  mlperf::ops::SelectDevice(launch.local_rank);
  stream.Create();
  nccl_options.stream = static_cast<cudaStream_t>(stream.get());
  nccl = rendezvous ? mlperf::dist::MakeNcclCommunicatorFromEnv(nccl_options)
                    : mlperf::dist::MakeNcclCommunicatorWithMpi(nccl_options);
  if (!nccl.ok()) return nccl.status();
  GpuComms comms;
  comms.device = std::move(*nccl);
  comms.host = closed::MakeHostStagedCommunicator(*comms.device, stream.get());
  return comms;
#else
  (void)launch;
  (void)stream;
  return absl::FailedPreconditionError(
      "this build has no CUDA/NCCL GPU path (configure on a machine with the CUDA toolkit, "
      "cuDNN and NCCL); run on the CPU without --gpus");
#endif
}

// All ranks learn whether rank 0's check passed.
bool AgreeOnRankZero(bool ok, mlperf::dist::Communicator& comm) {
  float flag = ok ? 1.0f : 0.0f;
  comm.Broadcast(&flag, 1, 0);
  return flag > 0;
}

// Checks for and writes the package frame (rank 0), and makes sure the data
// is there: the generated set is written once into the cache.
int PreparePackageAndData(const closed::RunPlan& plan, const closed::PackagePaths& paths,
                          mlperf::dist::Communicator& comm, const Reporter& report) {
  absl::Status status;
  if (comm.rank() == 0) {
    status = closed::CheckNothingToOverwrite(paths);
    if (status.ok() && !plan.demo && !fs::is_directory(plan.data_root))
      status = absl::NotFoundError(fmt::format("--data={}: no such folder", plan.data_root));
    if (status.ok()) {
      status = closed::PreparePackage(paths, closed::SystemDescriptionJson(plan),
                                      closed::PackageReadmeSection(plan));
    }
    if (!status.ok()) report.Error(std::string(status.message()));
  }
  if (!AgreeOnRankZero(status.ok(), comm)) return kExitUsage;
  if (plan.demo) {
    if (comm.rank() == 0) {
      report.Info(fmt::format("generated data set: {}", plan.data_root));
      const closed::GeneratedDataShape& g = plan.generated;
      status = mlperf::datasets::WriteSyntheticImageSet(
          plan.data_root, {.num_classes = g.num_classes, .train_per_class = g.train_per_class,
                           .val_per_class = g.val_per_class, .image_size = g.image_size,
                           .seed = g.seed});
      if (!status.ok()) report.Error(std::string(status.message()));
    }
    if (!AgreeOnRankZero(status.ok(), comm)) return kExitFailed;
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  absl::StatusOr<closed::CommandLine> cl = closed::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(cl.status().message()).c_str());
    return kExitUsage;
  }
  if (cl->help) {
    std::fputs(closed::UsageText().c_str(), stdout);
    return kExitOk;
  }
  const closed::RunnerOptions& options = cl->options;
  // Rank and world from the launcher (mpirun, srun, torchrun variables).
  absl::StatusOr<mlperf::dist::LaunchEnv> launch = mlperf::dist::ReadLaunchEnv();
  if (!launch.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(launch.status().message()).c_str());
    return kExitUsage;
  }
  std::unique_ptr<mlperf::dist::Communicator> comm, gradient_comm;
  GpuStream comm_stream;
  if (options.gpus > 0) {
    absl::StatusOr<GpuComms> gpu = MakeGpuComms(*launch, comm_stream);
    if (!gpu.ok()) {
      std::fprintf(stderr, "run_closed: --gpus=%d: %s\n", options.gpus,
                   std::string(gpu.status().message()).c_str());
      return kExitUsage;
    }
    gradient_comm = std::move(gpu->device);
    comm = std::move(gpu->host);
  } else {
    comm = launch->world_size > 1 ? mlperf::dist::MakeMpiCommunicator()
                                  : mlperf::dist::MakeSingleProcessCommunicator();
  }
  const Reporter report(*comm);
  absl::StatusOr<closed::RunPlan> plan =
      closed::MakeRunPlan(options, comm->world_size(), CoresPerProcess());
  if (!plan.ok()) {
    report.Info(std::string(plan.status().message()));
    return kExitUsage;
  }
  const closed::PackagePaths paths = closed::MakePackagePaths(
      options.out_dir, options.submitter, plan->system_name, options.benchmark);
  if (int code = PreparePackageAndData(*plan, paths, *comm, report); code != kExitOk) return code;

  omp_set_num_threads(plan->compute_threads);
  openblas_set_num_threads(plan->compute_threads);
  closed::InstallInterruptHandlers();
  const int last_epoch = options.max_epochs > 0 ? std::min(options.max_epochs, plan->last_epoch())
                                                : plan->last_epoch();
  closed::ProgressReporter progress(options.runs, last_epoch, closed::kResnetTarget,
                                    comm->rank() == 0 ? stderr : nullptr);
  report.Info(fmt::format("{} run(s) of {} on {}, {} process(es); package {}", options.runs,
                          plan->demo ? "the demonstration on generated data" : "ResNet-50",
                          closed::SystemSummary(), comm->world_size(), paths.org.string()));
  std::vector<uint64_t> seeds;
  int missed = 0;
  for (int run = 0; run < options.runs; ++run) {
    absl::StatusOr<uint64_t> seed = closed::NextRunSeed(options.seed, run, seeds, *comm);
    if (!seed.ok()) {
      report.Error(std::string(seed.status().message()));
      return kExitFailed;
    }
    seeds.push_back(*seed);
    const closed::RunOutcome outcome = closed::RunResnet(
        *plan,
        {.run = run,
         .seed = *seed,
         .log_path = paths.Incomplete(run).string(),
         .gradient_comm = gradient_comm.get(),
         .comm_stream = comm_stream.get()},
        *comm, progress);
    if (outcome.status == closed::RunStatus::kInterrupted) {
      report.Info(fmt::format(
          "interrupted during run {}: {} finished run(s) kept in {}; the unfinished log is {}",
          run + 1, run, paths.result_dir.string(), paths.Incomplete(run).string()));
      return kExitFailed;
    }
    if (outcome.status == closed::RunStatus::kFailed) {
      report.Error(fmt::format("run {} failed: {} (log left as {})", run + 1,
                               std::string(outcome.error.message()), paths.Incomplete(run).string()));
      return kExitFailed;
    }
    if (outcome.status == closed::RunStatus::kAborted) ++missed;
    if (comm->rank() == 0) {
      if (absl::Status s = closed::CommitResult(paths, run); !s.ok()) {
        report.Error(std::string(s.message()));
        return kExitFailed;
      }
    }
  }
  comm->Barrier();
  report.Info(fmt::format("package: {} ({} run(s), {} reached the target)", paths.org.string(),
                          options.runs, options.runs - missed));
  if (comm->rank() == 0) {
    std::fprintf(stderr, "Check it with:\n%s",
                 closed::CheckCommands(*plan, paths.org.string()).c_str());
    if (!plan->rcp_batch_size) {
      std::fprintf(stderr,
                   "(--rcp-bypass: no RCP exists for global batch size %lld, so the RCP check "
                   "cannot pass without it)\n",
                   static_cast<long long>(plan->recipe.global_batch_size));
    }
  }
  // Olympic scoring tolerates one run that missed the target (resnet).
  if (missed > 1) {
    report.Info(fmt::format("{} runs missed the target: the package will not pass", missed));
    return kExitFailed;
  }
  return kExitOk;
}
