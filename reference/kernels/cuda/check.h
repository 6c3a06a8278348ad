// Error checks for CUDA runtime, cuBLAS and cuDNN calls; each failure names
// the call, the file and the line, then aborts (programmer or device errors,
// not input errors).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstdio>
#include <cstdlib>

#define CUDA_CHECK(call)                                                 \
  do {                                                                   \
    const cudaError_t cuda_status = (call);                              \
    if (cuda_status != cudaSuccess) {                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorString(cuda_status));                     \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

#define CUBLAS_CHECK(call)                                                             \
  do {                                                                                 \
    const cublasStatus_t cublas_status = (call);                                       \
    if (cublas_status != CUBLAS_STATUS_SUCCESS) {                                      \
      std::fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(cublas_status));                                   \
      std::abort();                                                                    \
    }                                                                                  \
  } while (0)

#define CUDNN_CHECK(call)                                                \
  do {                                                                   \
    const cudnnStatus_t cudnn_status = (call);                           \
    if (cudnn_status != CUDNN_STATUS_SUCCESS) {                          \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   cudnnGetErrorString(cudnn_status));                   \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

// Launch errors surface at the next runtime call; check right after a launch.
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())
