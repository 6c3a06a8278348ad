// The cuDNN data type of a float tensor dtype (convolutions, batch norm).
#pragma once

#include <cudnn.h>

#include "base/check.h"
#include "reference/core/dtype.h"

namespace mlperf::cuda {

inline cudnnDataType_t CudnnType(core::DType t) {
  switch (t) {
    case core::DType::kF32:
      return CUDNN_DATA_FLOAT;
    case core::DType::kBF16:
      return CUDNN_DATA_BFLOAT16;
    case core::DType::kF16:
      return CUDNN_DATA_HALF;
    default:
      MLPERF_CHECK_MSG(false, "cuDNN takes fp32, bf16 or fp16 tensors here");
  }
  return CUDNN_DATA_FLOAT;
}

}  // namespace mlperf::cuda
