// run_closed: runs a registered closed-division MLPerf Training benchmark the
// required number of times and writes a submission package. This file only
// sets up the processes (launcher, communicators); the invocation itself is
// RunBenchmark. See docs/run_closed.md.
//
// Exit codes: 0 runs done; 1 a run or write failed, the invocation was
// interrupted, or more runs missed the target than olympic scoring allows;
// 2 usage or input error (bad flag, existing results, missing data).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "base/exit_codes.h"
#include "base/version.h"
#include "closed_division/flags.h"
#include "closed_division/registry.h"
#include "closed_division/run_benchmark.h"
#include "reference/dist/communicator.h"
#include "reference/dist/host_staged_comm.h"
#include "reference/dist/launch_env.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/kernels/dispatch.h"
#ifdef MLPERF_HAVE_NCCL
#include "reference/dist/nccl_communicator.h"
#endif

namespace {

namespace closed = mlperf::closed;

// This machine's cores and available memory shared among the processes
// launched on it; 90% of MemAvailable, leaving room for the system.
closed::ProcessShare ShareOfThisMachine() {
  int local = 1;
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = std::getenv(name); v != nullptr && std::atoi(v) > 0) {
      local = std::atoi(v);
      break;
    }
  }
  closed::ProcessShare share;
  share.cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / local);
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    int64_t kib = 0;
    meminfo >> kib;
    if (key == "MemAvailable:") share.memory_bytes = kib * 1024 / 10 * 9 / local;
    meminfo.ignore(64, '\n');
  }
  return share;
}

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
  comms.host = mlperf::dist::MakeHostStagedCommunicator(*comms.device, stream.get());
  return comms;
#else
  (void)launch;
  (void)stream;
  return absl::FailedPreconditionError(
      "this build has no CUDA/NCCL GPU path (configure on a machine with the CUDA toolkit, "
      "cuDNN and NCCL); run on the CPU without --gpus");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const closed::BenchmarkRegistry& registry = closed::BuiltinBenchmarks();
  absl::StatusOr<closed::CommandLine> cl = closed::ParseCommandLine(argc, argv);
  if (!cl.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(cl.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  if (cl->help) {
    std::fputs(closed::UsageText(registry).c_str(), stdout);
    return mlperf::kExitOk;
  }
  if (cl->version) {
    std::fputs(mlperf::base::VersionLine("run_closed").c_str(), stdout);
    return mlperf::kExitOk;
  }
  const closed::RunnerOptions& options = cl->options;
  const closed::Benchmark* benchmark = registry.Find(options.benchmark);
  if (benchmark == nullptr) {
    std::fprintf(stderr, "run_closed: --bench=%s: unknown benchmark (registered: %s)\n",
                 options.benchmark.c_str(), registry.Names().c_str());
    return mlperf::kExitUsage;
  }
  // Rank and world from the launcher (mpirun, srun, torchrun variables).
  absl::StatusOr<mlperf::dist::LaunchEnv> launch = mlperf::dist::ReadLaunchEnv();
  if (!launch.ok()) {
    std::fprintf(stderr, "run_closed: %s\n", std::string(launch.status().message()).c_str());
    return mlperf::kExitUsage;
  }
  std::unique_ptr<mlperf::dist::Communicator> comm, gradient_comm;
  GpuStream comm_stream;
  if (options.gpus > 0) {
    absl::StatusOr<GpuComms> gpu = MakeGpuComms(*launch, comm_stream);
    if (!gpu.ok()) {
      std::fprintf(stderr, "run_closed: --gpus=%d: %s\n", options.gpus,
                   std::string(gpu.status().message()).c_str());
      return mlperf::kExitUsage;
    }
    gradient_comm = std::move(gpu->device);
    comm = std::move(gpu->host);
  } else {
    comm = launch->world_size > 1 ? mlperf::dist::MakeMpiCommunicator()
                                  : mlperf::dist::MakeSingleProcessCommunicator();
    // CPU ranks talk over MPI: processes started by another launcher (e.g.
    // torchrun's RANK/WORLD_SIZE) would each be a world of one.
    if (comm->world_size() != launch->world_size) {
      std::fprintf(stderr,
                   "run_closed: the launcher (%s) started %d processes but MPI sees %d; on the "
                   "CPU start the ranks with mpirun or srun\n",
                   launch->source.c_str(), launch->world_size, comm->world_size());
      return mlperf::kExitUsage;
    }
  }
  return closed::RunBenchmark(
      *benchmark, options,
      {.control = comm.get(), .gradients = gradient_comm.get(), .stream = comm_stream.get()},
      ShareOfThisMachine());
}
