// The rounding points of precision.h, for the GEMM-class ops of ops::.
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::ops {

// Inputs one op may hold rounded at once (e.g. activation, weight, bias).
constexpr int kOperandSlots = 3;

// x as a GEMM-class op reads it: x itself under fp32, else a copy rounded to
// the compute precision in scratch `slot` of x's device, valid until the
// next op that uses the slot.
core::Tensor RoundedOperand(const core::Tensor& x, int slot);
// Rounds an op's output in place to the compute precision (nothing under fp32).
void RoundOutput(const core::Tensor& y);

}  // namespace mlperf::ops
