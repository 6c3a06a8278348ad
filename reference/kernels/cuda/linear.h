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

// dbias[o] = the sum over the rows of dy [rows, out] (fp32, bf16 or fp16) in
// a fixed order, read coalesced in chunks of rows: a dense layer's bias
// gradient, and a channels-last convolution's.
void BiasGradient(const core::Tensor& dy, float* dbias, int64_t rows, int64_t out);

}  // namespace mlperf::cuda
