// Convolutions on NC[D]HW tensors by im2col + GEMM, one image at a time.
// Weights are [out_channels, in_channels, kD, kH, kW] (PyTorch order).
// Transposed convolution is the adjoint of a convolution: its forward is a
// convolution's data gradient and vice versa (PyTorch weight [in, out, k...]).
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::cpu {

// Floats of scratch the calls below need (zero for pointwise convolutions).
int64_t ConvWorkspaceElements(const ConvGeometry& g);

void ConvForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& w,
                 const core::Tensor& y, const core::Tensor& workspace);
void ConvBackwardData(const ConvGeometry& g, const core::Tensor& dy, const core::Tensor& w,
                      const core::Tensor& dx, const core::Tensor& workspace);
void ConvBackwardWeight(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& dy,
                        const core::Tensor& dw, const core::Tensor& workspace);

// `g` describes the convolution whose adjoint this is: g.in is the transposed
// conv's output size, g.out() its input size, g.in_channels its output channels.
void ConvTransposeForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& w,
                          const core::Tensor& y, const core::Tensor& workspace);
void ConvTransposeBackwardData(const ConvGeometry& g, const core::Tensor& dy, const core::Tensor& w,
                               const core::Tensor& dx, const core::Tensor& workspace);
void ConvTransposeBackwardWeight(const ConvGeometry& g, const core::Tensor& x,
                                 const core::Tensor& dy, const core::Tensor& dw,
                                 const core::Tensor& workspace);

// y[n, c, s] += bias[c]; and its gradient db[c] = sum over n, s of dy.
void BiasAddChannels(const core::Tensor& bias, const core::Tensor& y);
void BiasBackwardChannels(const core::Tensor& dy, const core::Tensor& dbias);

}  // namespace mlperf::cpu
