// Staging: a copy of a convolution operand in another memory order or
// dtype, for the calls that cuDNN has no kernel for as given. Channels-last
// activations get a channels-last filter (the order cuDNN's channels-last
// kernels take); a call still without a kernel runs on fp32 channels-first
// copies, the configuration every convolution has, with the same fp32
// accumulation and one rounding of the result to its dtype. Internal to
// cuda/conv.
#pragma once

#include "reference/core/dtype.h"
#include "reference/core/tensor.h"

namespace mlperf::cuda {

// A 5-D (volume) activation or filter: by layout tag or rank.
bool IsVolume(const core::Tensor& t);

// A scratch tensor (slot `slot`) for `t`'s values [N, C, spatial] in
// `dtype` and the given channel order, its contents not yet written.
core::Tensor StagedLike(const core::Tensor& t, core::DType dtype, bool channels_last, int slot);
// dst = src, both [N, C, spatial], converting memory order and dtype.
void CopyStaged(const core::Tensor& src, const core::Tensor& dst);
// StagedLike(t, ...) holding t's values.
core::Tensor Restaged(const core::Tensor& t, core::DType dtype, bool channels_last, int slot);

}  // namespace mlperf::cuda
