// Per-thread CUDA state shared by the twins: the stream every op is queued
// on, the cuBLAS and cuDNN handles, and device scratch buffers.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <cstdint>

namespace mlperf::cuda {

// True when a CUDA device can be used (tests skip otherwise).
bool DeviceAvailable();
cudaStream_t Stream();
cublasHandle_t Cublas();
cudnnHandle_t Cudnn();

// Independent scratch buffers, so that one op can hold several at once
// (e.g. a padded copy of its input plus the cuDNN workspace).
enum ScratchSlot : int {
  kScratchTables = 0,     // the optimizers' chunk table (uploaded when it changes)
  kScratchWorkspace = 1,  // cuDNN / reduction workspace
  kScratchPadded = 2,     // explicitly padded activations
  kScratchReduce = 3,     // per-row partial results of reductions
  kScratchOperand0 = 4,   // operands rounded to the compute precision (3 slots)
  kScratchFilter = 7,     // a convolution filter staged channels-last
  kScratchStaged0 = 8,    // convolution operands staged fp32 channels-first (3 slots)
  kNumScratchSlots = 11,
};

// Device scratch of at least `bytes` in `slot`. It only grows, so after the
// first (warm-up) step a training step reuses it without allocating.
void* Scratch(size_t bytes, int slot = kScratchTables);
void Synchronize();

// Counts the changes of device memory that captured work (graph.h) reads
// without naming it in a tensor: a scratch buffer reallocated, the
// optimizers' chunk table rewritten. Work captured before a change is stale.
uint64_t ResourceGeneration();
void NoteResourceChange();

inline int Blocks(long long n, int threads = 256) {
  const long long b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

}  // namespace mlperf::cuda
