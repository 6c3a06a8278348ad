// CUDA twin of cpu/linear.h.
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cuda {

// x: [rows, in], w: [out, in], bias: [out] or empty, y: [rows, out].
void LinearForward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
                   const core::Tensor& y);
// Any of dx, dbias may be empty to skip it. dw and dbias are overwritten.
void LinearBackward(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
                    const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias);

}  // namespace mlperf::cuda
