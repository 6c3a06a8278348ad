// Softmax over the last dimension, declared once (kernels/op.h); kernels in
// cpu/softmax.cc and cuda/softmax.cu.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

inline Op<void(const core::Tensor& x, const core::Tensor& y)> SoftmaxForward{"SoftmaxForward"};
// dx = y * (dy - sum(dy * y)); uses the forward output.
inline Op<void(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx)>
    SoftmaxBackward{"SoftmaxBackward"};

}  // namespace mlperf::ops
