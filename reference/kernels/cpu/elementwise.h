// Pointwise activations, residual adds, dropout, casts and channel concat.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cpu {

// y += x (gradient accumulation where a tensor feeds two consumers); the
// sum rounded to `round_to` (bf16 or fp16) as it is written, if given.
void Accumulate(const core::Tensor& x, const core::Tensor& y,
                core::DType round_to = core::DType::kF32);

// dst = src rounded to bf16 or fp16 precision, kept in fp32 (the rounding
// points of ops/precision.h); in place when src and dst are the same.
void RoundToPrecision(core::DType precision, const core::Tensor& src, const core::Tensor& dst);

}  // namespace mlperf::cpu
