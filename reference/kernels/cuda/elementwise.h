// CUDA twins of cpu/elementwise.h (same signatures, device tensors).
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cuda {

// y += x (gradient accumulation where a tensor feeds two consumers); each
// fp32, bf16 or fp16.
void Accumulate(const core::Tensor& x, const core::Tensor& y);

// dst = src rounded to bf16 or fp16 precision, kept in fp32 (the rounding
// points of ops/precision.h); in place when src and dst are the same.
void RoundToPrecision(core::DType precision, const core::Tensor& src, const core::Tensor& dst);

}  // namespace mlperf::cuda
