// CUDA graphs: the work a thread queues on its ops stream (context.h),
// recorded once and replayed as one launch, which removes the per-kernel
// launch cost of a training step.
#pragma once

#include <cuda_runtime.h>

namespace mlperf::cuda {

// Starts recording this thread's ops stream: work queued from now on is
// recorded, not run. Streams that wait on it join the recording and must be
// joined back before EndCapture.
void BeginCapture();
// Ends the recording and returns it ready to launch.
cudaGraphExec_t EndCapture();
// Queues the recorded work on the ops stream.
void Launch(cudaGraphExec_t graph);
void Destroy(cudaGraphExec_t graph);

}  // namespace mlperf::cuda
