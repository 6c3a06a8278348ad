// A convolution and the inference batch norm after it as one pass: the
// convolution's output goes from each core's cache straight into the
// normalisation (cpu/conv_nhwc's ConvForwardRows), instead of a trip through
// memory between two ops. Inference only: training needs the batch's
// statistics of the whole output before it can normalise any of it.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/norm_params.h"

namespace mlperf::cpu {

// Whether the fused op takes these activations: channels-last x and y.
bool FusesConvBatchNorm(const core::Tensor& x, const core::Tensor& y);

// y = act(BN(conv(x, w)) + residual) with the running statistics, where the
// convolution's output is rounded to `conv_round_to` (as ConvForward would
// store it) and y, with the normalised value before a residual add, to
// `round_to`: the bits of ConvForward then BatchNormActForwardInference.
// x, y and residual channels-last (FusesConvBatchNorm); the workspace that
// ConvWorkspaceElements(g, y.layout()) sizes. Under bf16 with the GEMMs on
// AMX tiles, x and y (the residual as y) may be stored in bf16 (ResNet's
// storage there, ops::ActivationStorageType): the same values.
void ConvBatchNormActForwardInference(const ConvGeometry& g, const core::Tensor& x,
                                      const core::Tensor& w, const core::Tensor& workspace,
                                      const BatchNormParams& p, bool relu,
                                      const core::Tensor& residual, const core::Tensor& gamma,
                                      const core::Tensor& beta, const core::Tensor& running_mean,
                                      const core::Tensor& running_var, const core::Tensor& y,
                                      core::DType conv_round_to, core::DType round_to);

}  // namespace mlperf::cpu
