// Max and average pooling, and global average pooling. Max and global
// average pooling take NC[D]HW (kNCHW / kNCDHW / kRowMajor) or channels-last
// N[D]HWC (kNHWC / kNDHWC, channels the last dimension); input and output
// must be in the same layout family (checked). Average pooling is NC[D]HW
// only. Pooling geometry uses ConvGeometry with out_channels == in_channels.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::cpu {

// Padded positions never win (they count as -inf), as in TF and PyTorch.
// Channels-last max pooling and global average pooling forwards also read
// bf16 activations (ResNet's storage under bf16 on AMX); max pooling then
// writes bf16 too.
void MaxPoolForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& y);
// Routes dy to the first maximum of each window, recomputed from x.
void MaxPoolBackward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& dy,
                     const core::Tensor& dx);

// count_include_pad: PyTorch's default divides by the full window; TF "same"
// divides by the valid positions only.
void AvgPoolForward(const ConvGeometry& g, bool count_include_pad, const core::Tensor& x,
                    const core::Tensor& y);
void AvgPoolBackward(const ConvGeometry& g, bool count_include_pad, const core::Tensor& dy,
                     const core::Tensor& dx);

// [N, C, spatial...] or channels-last [N, spatial..., C] -> [N, C], the mean
// over the spatial positions; the layout is read from x (forward) and dx.
void GlobalAvgPoolForward(const core::Tensor& x, const core::Tensor& y);
void GlobalAvgPoolBackward(const core::Tensor& dy, const core::Tensor& dx);

}  // namespace mlperf::cpu
