// CUDA twin of cpu/softmax.h: one block per row, fp32 accumulation.
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cuda {

void SoftmaxForward(const core::Tensor& x, const core::Tensor& y);
// dx = y * (dy - sum(dy * y)); uses the forward output.
void SoftmaxBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx);

}  // namespace mlperf::cuda
