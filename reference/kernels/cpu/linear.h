// Fully connected layer y = x W^T + b with W stored [out, in] (PyTorch order).
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cpu {

// x: [rows, in], w: [out, in], bias: [out] or empty, y: [rows, out].
void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y);
// Any of dx, dbias may be empty to skip it. dw and dbias are overwritten;
// all three rounded to round_to (nothing under kF32) as they are written.
void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias,
                    core::DType round_to = core::DType::kF32);

}  // namespace mlperf::cpu
