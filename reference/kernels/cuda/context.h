// Per-thread CUDA state shared by the twins: the stream every op is queued
// on, the cuBLAS handle, and a device scratch buffer for small tables.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace mlperf::cuda {

// True when a CUDA device can be used (tests skip otherwise).
bool DeviceAvailable();
cudaStream_t Stream();
cublasHandle_t Cublas();
// Device scratch of at least `bytes`. It only grows, so after the first
// (warm-up) step a training step reuses it without allocating.
void* Scratch(size_t bytes);
void Synchronize();

inline int Blocks(long long n, int threads = 256) {
  const long long b = (n + threads - 1) / threads;
  return static_cast<int>(b < 65535 ? (b > 0 ? b : 1) : 65535);
}

}  // namespace mlperf::cuda
