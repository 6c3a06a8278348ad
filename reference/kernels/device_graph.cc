#include "reference/kernels/device_graph.h"

#include "base/check.h"

#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/graph.h"
#endif

namespace mlperf::ops {

#ifdef MLPERF_HAVE_CUDA

DeviceGraph::~DeviceGraph() { Reset(); }

bool DeviceGraph::Capture(const std::function<void()>& queue) {
  Reset();
  const uint64_t before = cuda::ResourceGeneration();
  cuda::BeginCapture();
  queue();
  cudaGraphExec_t exec = cuda::EndCapture();
  if (cuda::ResourceGeneration() != before) {
    cuda::Destroy(exec);
    return false;
  }
  exec_ = exec;
  generation_ = before;
  return true;
}

void DeviceGraph::Replay() {
  MLPERF_CHECK_MSG(Current(), "DeviceGraph::Replay: nothing current recorded");
  cuda::Launch(static_cast<cudaGraphExec_t>(exec_));
}

uint64_t DeviceGraph::ResourceGeneration() { return cuda::ResourceGeneration(); }

bool DeviceGraph::Current() const {
  return exec_ != nullptr && cuda::ResourceGeneration() == generation_;
}

void DeviceGraph::Reset() {
  if (exec_ != nullptr) cuda::Destroy(static_cast<cudaGraphExec_t>(exec_));
  exec_ = nullptr;
}

#else

DeviceGraph::~DeviceGraph() = default;

bool DeviceGraph::Capture(const std::function<void()>&) {
  MLPERF_CHECK_MSG(false, "DeviceGraph: a build without CUDA has no device to record");
  return false;
}

void DeviceGraph::Replay() { MLPERF_CHECK_MSG(false, "DeviceGraph: a build without CUDA"); }

uint64_t DeviceGraph::ResourceGeneration() { return 0; }

bool DeviceGraph::Current() const { return false; }

void DeviceGraph::Reset() {}

#endif

}  // namespace mlperf::ops
