// The ops a detector's feature pyramid and frozen backbone need, declared
// once (kernels/op.h); kernels in cpu/detection.cc and cuda/detection.cu.
// Activations are fp32 channels-first [N, C, H, W].
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// PyTorch's "nearest" resize to y's size: source row floor(i * (in / out))
// with the ratio in fp32 (exactly i / 2 when doubling), capped at the last
// row; the same for columns (an FPN's top-down path).
inline Op<void(const core::Tensor& x, const core::Tensor& y)> UpsampleNearest{"UpsampleNearest"};
// Its adjoint: dx at each source pixel is the sum of dy over the outputs
// that read it.
inline Op<void(const core::Tensor& dy, const core::Tensor& dx)> UpsampleNearestBackward{
    "UpsampleNearestBackward"};
// The gradient through a frozen batch norm (torchvision's
// FrozenBatchNorm2d): dx = dy * weight[c] / sqrt(running_var[c] + eps).
inline Op<void(const core::Tensor& dy, const core::Tensor& weight, const core::Tensor& running_var,
               float epsilon, const core::Tensor& dx)>
    FrozenBatchNormBackward{"FrozenBatchNormBackward"};
// The suppression matrix of non-maximum suppression over boxes [n, 4] fp32
// (x1, y1, x2, y2) in the order NMS visits them: bit j % 64 of mask[i, j /
// 64] (int64 [n, ceil(n / 64)]) is set when j > i and their IoU, in fp32 as
// detection::Nms computes it, is above the threshold. The host walks it
// (detection::WalkSuppression).
inline Op<void(const core::Tensor& boxes, double iou_threshold, const core::Tensor& mask)> NmsMask{
    "NmsMask"};

}  // namespace mlperf::ops
