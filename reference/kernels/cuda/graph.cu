#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/graph.h"

namespace mlperf::cuda {

void BeginCapture() {
  // Thread-local mode: another thread's allocations (a data loader's) are
  // not the recording's business, while this thread's own unsafe calls (a
  // synchronize, an allocation) fail loudly instead of being recorded.
  CUDA_CHECK(cudaStreamBeginCapture(Stream(), cudaStreamCaptureModeThreadLocal));
}

cudaGraphExec_t EndCapture() {
  cudaGraph_t graph = nullptr;
  CUDA_CHECK(cudaStreamEndCapture(Stream(), &graph));
  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphDestroy(graph));
  return exec;
}

void Launch(cudaGraphExec_t graph) { CUDA_CHECK(cudaGraphLaunch(graph, Stream())); }

void Destroy(cudaGraphExec_t graph) { CUDA_CHECK(cudaGraphExecDestroy(graph)); }

}  // namespace mlperf::cuda
