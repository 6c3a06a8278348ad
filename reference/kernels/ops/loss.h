// The references' losses and the evaluation's argmax, declared once
// (kernels/op.h); kernels in cpu/loss.cc and cuda/loss.cu.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/loss_shapes.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// Softmax cross-entropy on logits [rows, classes], labels int32 [rows]. The
// target is (1 - smoothing) * onehot + smoothing / classes (tf.keras label
// smoothing, ResNet reference 0.1); loss = sum over rows / normalizer (the
// reference divides by the global batch size).
inline Op<void(float label_smoothing, float normalizer, const core::Tensor& logits,
               const core::Tensor& labels, const core::Tensor& loss, const core::Tensor& dlogits)>
    SoftmaxCrossEntropy{"SoftmaxCrossEntropy"};

// 3D U-Net DiceCELoss: (dice_loss + ce) / 2 on logits [N, C, spatial...] (or
// channels-last [N, spatial..., C]) and labels int32 [N, spatial...]. ce is
// the mean over voxels; dice per sample and class on softmax probabilities,
// (2 sum(p t) + 1e-6) / (sum t + sum p + 1e-6), background excluded,
// dice_loss = mean over N x (C - 1) of (1 - dice). workspace:
// DiceCrossEntropyWorkspaceElements (kernels/loss_shapes.h) floats.
inline Op<void(const core::Tensor& logits, const core::Tensor& labels, const core::Tensor& loss,
               const core::Tensor& dlogits, const core::Tensor& workspace)>
    DiceCrossEntropy{"DiceCrossEntropy"};

// BERT masked-LM loss on logits [predictions, vocab], labels int32, weights
// fp32 (1 real, 0 padding): sum(w * nll) / (sum(w) + 1e-5), as the
// reference's get_masked_lm_output.
inline Op<void(const core::Tensor& logits, const core::Tensor& labels, const core::Tensor& weights,
               const core::Tensor& loss, const core::Tensor& dlogits)>
    MaskedLmLoss{"MaskedLmLoss"};

// Evaluation: argmax[r] = the first index of the largest value of row r of
// logits [rows, classes] (int32); NaN never counts as largest, and a row of
// NaN gives 0. On a device only the indices come back to the host, not the
// logits (BERT's are [predictions, 30522] per evaluation batch).
inline Op<void(const core::Tensor& logits, const core::Tensor& argmax)> ArgmaxRows{"ArgmaxRows"};

}  // namespace mlperf::ops
