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
// x as an op's GEMMs alone read it: x itself where the CPU's GEMMs round
// their operands to bf16 as they pack them (AMX under bf16, cpu/gemm.h),
// else RoundedOperand(x, slot). The products are the same.
core::Tensor GemmOperand(const core::Tensor& x, int slot);
// x widened to fp32 in the scratch `slot` when it is stored narrower (a
// frozen bf16 weight under LoRA); x itself when it is fp32. Exact.
core::Tensor WidenedOperand(const core::Tensor& x, int slot);
// Rounds an op's output in place to the compute precision (nothing under
// fp32, or when y is stored in the precision's type: its op rounded it).
void RoundOutput(const core::Tensor& y);

// The CUDA backend runs the GEMM-class ops in the precision's own type (the
// tensor cores, fp32 accumulation), where the CPU rounds in fp32 storage:
// both read the same values and round their outputs the same way.
// Whether x's op runs so: x on a CUDA device under bf16 or fp16.
bool InPrecisionType(const core::Tensor& x);
// x converted to the compute precision's type (bf16 or fp16, round to
// nearest even) in the device scratch `slot`, until the slot's next use; x
// itself when it is stored in that type.
core::Tensor PrecisionTypeOperand(const core::Tensor& x, int slot);
// A device scratch tensor shaped like y in the compute precision's type, for
// an op's output; CopyToFp32 then widens it into y (exactly).
core::Tensor PrecisionTypeOutput(const core::Tensor& y, int slot);
void CopyToFp32(const core::Tensor& half, const core::Tensor& y);

}  // namespace mlperf::ops
