// Every *_CHECK macro of the project: programmer invariants (MLPERF_CHECK) and
// the status checks of the CUDA runtime, cuBLAS, cuDNN, NCCL and MPI calls.
// Each failure names the call, the file and the line, then aborts (programmer
// or device errors; input from files goes through absl::Status instead). The
// API checks expand only where the API's own header is included.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace mlperf::base {

[[noreturn]] inline void CheckFailed(const char* file, int line, const char* cond,
                                     const char* msg) {
  std::fprintf(stderr, "%s:%d: check failed: %s %s\n", file, line, cond, msg);
  std::abort();
}

}  // namespace mlperf::base

#define MLPERF_CHECK(cond)                                                   \
  do {                                                                       \
    if (!(cond)) ::mlperf::base::CheckFailed(__FILE__, __LINE__, #cond, ""); \
  } while (0)

#define MLPERF_CHECK_MSG(cond, msg)                                             \
  do {                                                                          \
    if (!(cond)) ::mlperf::base::CheckFailed(__FILE__, __LINE__, #cond, (msg)); \
  } while (0)

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

#define NCCL_CHECK(call)                                                 \
  do {                                                                   \
    const ncclResult_t nccl_status = (call);                             \
    if (nccl_status != ncclSuccess) {                                    \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                   ncclGetErrorString(nccl_status));                     \
      std::abort();                                                      \
    }                                                                    \
  } while (0)

#define MPI_CHECK(call)                                                                       \
  do {                                                                                        \
    const int mpi_status = (call);                                                            \
    if (mpi_status != MPI_SUCCESS) {                                                          \
      std::fprintf(stderr, "%s:%d: %s failed with MPI error %d\n", __FILE__, __LINE__, #call, \
                   mpi_status);                                                               \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)
