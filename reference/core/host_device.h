// MLPERF_HD: a function compiled for both the host and a CUDA device (inline
// host code in a plain C++ build), for arithmetic the CPU and GPU twins share.
#pragma once

#if defined(__CUDACC__)
#define MLPERF_HD __host__ __device__ __forceinline__
#else
#define MLPERF_HD inline
#endif
