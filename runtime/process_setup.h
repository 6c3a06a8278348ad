// What every process of a multi-process tool (run_closed, run_benchmark) sets
// up before its work: its share of the machine, and the communicators for
// the launch it is part of (MPI on the CPU; NCCL plus a host-staged view of
// it on GPUs).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "benchmarks/plan.h"
#include "reference/dist/communicator.h"
#include "reference/dist/launch_env.h"
#include "reference/kernels/device_runtime.h"
#include "runtime/collective_watchdog.h"

namespace mlperf::runtime {

using benchmarks::ProcessShare;

// The communicators a tool's work goes through.
struct RunComms {
  // Control messages and, on the CPU, gradients (host buffers).
  dist::Communicator* control = nullptr;
  // GPU runs: the communicator on device buffers and the stream it queues on.
  dist::Communicator* gradients = nullptr;
  ops::Stream stream;
};

// This machine's cores and available memory shared among the processes
// launched on it; 90% of MemAvailable, leaving room for the system.
ProcessShare ShareOfThisMachine();

// The communicators of one process, and the stream NCCL queues on (GPU runs).
class ProcessComms {
 public:
  ProcessComms() = default;
  ProcessComms(const ProcessComms&) = delete;
  ProcessComms& operator=(const ProcessComms&) = delete;
  ~ProcessComms();

  RunComms view() const { return {control.get(), gradients.get(), stream.get()}; }

  std::unique_ptr<dist::Communicator> control, gradients;
  ops::OwnedStream stream;
  // With WatchCollectives: `control` is the watched view of `unwatched`.
  std::unique_ptr<CollectiveWatchdog> watchdog;
  std::unique_ptr<dist::Communicator> unwatched;
};

// CPU (gpus = false): MPI for more than one process, else a world of one;
// an error when MPI's world differs from the launcher's (processes started
// by a launcher MPI does not know). GPUs: NCCL bootstrapped over MPI under
// mpirun, or over the TCP rendezvous for a single process or torchrun-style
// variables; an error when the build has no NCCL or no device is visible.
absl::StatusOr<std::unique_ptr<ProcessComms>> MakeProcessComms(const dist::LaunchEnv& launch,
                                                               bool gpus);

// Bounds the control communicator's waits for a lost peer (collective:
// runtime/collective_watchdog.h); nothing for one process or a timeout of 0.
// On the CPU that is every collective; on GPUs the control messages (the
// host side of each step and evaluation), not NCCL's queued gradients.
absl::Status WatchCollectives(ProcessComms& comms, std::chrono::milliseconds timeout,
                              std::string tool);

// The nodes the launcher placed the processes on: one local rank 0 on each
// (collective over `control`). An error naming both counts when `nodes`
// (the --nodes flag) says otherwise.
absl::Status CheckLaunchedNodes(const dist::LaunchEnv& launch, dist::Communicator& control,
                                int nodes);

}  // namespace mlperf::runtime
