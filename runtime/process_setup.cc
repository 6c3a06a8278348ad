#include "runtime/process_setup.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

#include "base/environment.h"
#include "fmt/format.h"
#include "reference/dist/host_staged_comm.h"
#include "reference/dist/mpi_communicator.h"
#include "reference/kernels/dispatch.h"
#ifdef MLPERF_HAVE_NCCL
#include "reference/dist/nccl_communicator.h"
#endif

namespace mlperf::runtime {

ProcessShare ShareOfThisMachine() {
  int local = 1;
  for (const char* name :
       {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE"}) {
    if (const char* v = base::GetEnv(name); v != nullptr && std::atoi(v) > 0) {
      local = std::atoi(v);
      break;
    }
  }
  ProcessShare share;
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

ProcessComms::~ProcessComms() {
  // The communicators queue on the stream: they go first; the watched view
  // before its watchdog and what it watches.
  control.reset();
  watchdog.reset();
  unwatched.reset();
  gradients.reset();
}

absl::Status WatchCollectives(ProcessComms& comms, std::chrono::milliseconds timeout,
                              std::string tool) {
  if (comms.control->world_size() == 1 || timeout.count() <= 0) return absl::OkStatus();
  absl::StatusOr<std::unique_ptr<CollectiveWatchdog>> dog =
      CollectiveWatchdog::Start(*comms.control, timeout, std::move(tool));
  if (!dog.ok()) return dog.status();
  comms.watchdog = std::move(*dog);
  comms.unwatched = std::move(comms.control);
  comms.control = comms.watchdog->Watch(*comms.unwatched);
  return absl::OkStatus();
}

namespace {

absl::Status AddGpuComms(const dist::LaunchEnv& launch, ProcessComms& comms) {
#ifdef MLPERF_HAVE_NCCL
  if (!ops::CudaAvailable())
    return absl::FailedPreconditionError("no CUDA device is visible to this process");
  const bool rendezvous = launch.world_size == 1 || base::GetEnv("MASTER_ADDR") != nullptr;
  // The same choice the communicator makes (local rank modulo the devices),
  // made first so that the stream and the ops context live on that device.
  ops::SelectDevice(launch.local_rank);
  comms.stream = ops::OwnedStream::NonBlocking();
  dist::NcclOptions nccl_options;
  nccl_options.stream = static_cast<cudaStream_t>(comms.stream.get().native());
  absl::StatusOr<std::unique_ptr<dist::Communicator>> nccl =
      rendezvous ? dist::MakeNcclCommunicatorFromEnv(nccl_options)
                 : dist::MakeNcclCommunicatorWithMpi(nccl_options);
  if (!nccl.ok()) return nccl.status();
  comms.gradients = std::move(*nccl);
  comms.control = dist::MakeHostStagedCommunicator(*comms.gradients, comms.stream.get());
  return absl::OkStatus();
#else
  (void)launch;
  (void)comms;
  return absl::FailedPreconditionError(
      "this build has no CUDA/NCCL GPU path (configure on a machine with the CUDA toolkit, "
      "cuDNN and NCCL); run on the CPU");
#endif
}

}  // namespace

absl::StatusOr<std::unique_ptr<ProcessComms>> MakeProcessComms(const dist::LaunchEnv& launch,
                                                               bool gpus) {
  auto comms = std::make_unique<ProcessComms>();
  if (gpus) {
    if (absl::Status s = AddGpuComms(launch, *comms); !s.ok()) return s;
    return comms;
  }
  comms->control =
      launch.world_size > 1 ? dist::MakeMpiCommunicator() : dist::MakeSingleProcessCommunicator();
  // CPU ranks talk over MPI: processes started by another launcher (e.g.
  // torchrun's RANK/WORLD_SIZE) would each be a world of one.
  if (comms->control->world_size() != launch.world_size) {
    return absl::InvalidArgumentError(fmt::format(
        "the launcher ({}) started {} processes but MPI sees {}; on the CPU start the ranks with "
        "mpirun or srun",
        launch.source, launch.world_size, comms->control->world_size()));
  }
  return comms;
}

absl::Status CheckLaunchedNodes(const dist::LaunchEnv& launch, dist::Communicator& control,
                                int nodes) {
  float first_on_node = launch.local_rank == 0 ? 1.0f : 0.0f;
  control.AllReduceSum(&first_on_node, 1);
  const int launched = static_cast<int>(first_on_node);
  if (launched == nodes) return absl::OkStatus();
  return absl::InvalidArgumentError(fmt::format(
      "--nodes={} but the launcher ({}) placed the {} process(es) on {} node(s) (local ranks "
      "from 0 on each); pass --nodes {}",
      nodes, launch.source, launch.world_size, launched, launched));
}

}  // namespace mlperf::runtime
