// Pooling, declared once (kernels/op.h); kernels in cpu/pool.cc and
// cuda/pool.cu.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// Padded positions never win (they count as -inf), as in TF and PyTorch.
// Channels-last max pooling and global average pooling forwards also read
// bf16 activations (ResNet's storage under bf16); max pooling then writes
// bf16 too.
inline Op<void(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& y)> MaxPoolForward{
    "MaxPoolForward"};
// Routes dy to the first maximum of each window, recomputed from x.
inline Op<void(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& dy,
               const core::Tensor& dx)>
    MaxPoolBackward{"MaxPoolBackward"};

// count_include_pad: PyTorch's default divides by the full window; TF "same"
// divides by the valid positions only.
inline Op<void(const ConvGeometry& g, bool count_include_pad, const core::Tensor& x,
               const core::Tensor& y)>
    AvgPoolForward{"AvgPoolForward"};
inline Op<void(const ConvGeometry& g, bool count_include_pad, const core::Tensor& dy,
               const core::Tensor& dx)>
    AvgPoolBackward{"AvgPoolBackward"};

// [N, C, spatial...] or channels-last [N, spatial..., C] -> [N, C], the mean
// over the spatial positions; the layout is read from x (forward) and dx.
inline Op<void(const core::Tensor& x, const core::Tensor& y)> GlobalAvgPoolForward{
    "GlobalAvgPoolForward"};
inline Op<void(const core::Tensor& dy, const core::Tensor& dx)> GlobalAvgPoolBackward{
    "GlobalAvgPoolBackward"};

}  // namespace mlperf::ops
