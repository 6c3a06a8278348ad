// The CUDA, cuBLAS and cuDNN headers with the project's check macros
// (CUDA_CHECK, CUBLAS_CHECK, CUDNN_CHECK, defined in base/check.h).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "base/check.h"
