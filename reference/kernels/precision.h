// Mixed precision as a runtime choice: the compute precision of the
// GEMM-class ops (convolutions, linear layers, batched GEMMs) on both
// backends. Master weights, optimizer state and everything else stay fp32.
//
// The rounding points, the same on the CPU and the GPU (and the rule of
// PyTorch's autocast for these ops): under bf16 or fp16 each floating input
// of a GEMM-class op (activation, weight, bias, incoming gradient) is rounded
// to the precision (round to nearest even) into a scratch copy, the product
// accumulates in fp32, and the op's outputs (activation, input gradient,
// weight and bias gradients) are rounded in place. Norm statistics, softmax,
// losses, pointwise ops and the optimizers read and write fp32. Tensors keep
// fp32 storage, holding values representable in the precision where the
// rounding points put them.
#pragma once

#include <string_view>

#include "reference/core/dtype.h"
#include "reference/core/tensor.h"

namespace mlperf::ops {

// fp32 (the default), bf16 or fp16; set for the process by PrecisionScope.
core::DType ComputePrecision();
// "fp32", "bf16" or "fp16" (the flags' names), for messages.
std::string_view PrecisionName(core::DType precision);

// Sets the compute precision until destroyed (then the previous one comes
// back). Not for concurrent use: one training loop per process sets it.
class PrecisionScope {
 public:
  explicit PrecisionScope(core::DType precision);
  ~PrecisionScope();
  PrecisionScope(const PrecisionScope&) = delete;
  PrecisionScope& operator=(const PrecisionScope&) = delete;

 private:
  core::DType previous_;
};

// dst = src rounded to `precision` (bf16 or fp16, nearest even, Inf beyond
// the range, NaN kept), both fp32 tensors on the same device; in place when
// they are the same tensor.
void RoundToPrecision(core::DType precision, const core::Tensor& src, const core::Tensor& dst);

}  // namespace mlperf::ops
