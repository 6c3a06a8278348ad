// Softmax over the last dimension of [rows, classes].
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cpu {

void SoftmaxForward(const core::Tensor& x, const core::Tensor& y);
// dx = y * (dy - sum(dy * y)); uses the forward output.
void SoftmaxBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx);

}  // namespace mlperf::cpu
