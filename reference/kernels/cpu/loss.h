// Losses with their gradients. Each writes the scalar loss into a 1-element
// tensor on the op's device (no host round-trip on the GPU) and the gradient
// of that loss with respect to the logits.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/loss_shapes.h"

namespace mlperf::cpu {

using mlperf::DiceCrossEntropyWorkspaceElements;

// Softmax cross-entropy on logits [rows, classes], labels int32 [rows]. The
// target is (1 - smoothing) * onehot + smoothing / classes (tf.keras label
// smoothing, ResNet reference 0.1); loss = sum over rows / normalizer (the
// reference divides by the global batch size).
void SoftmaxCrossEntropy(float label_smoothing, float normalizer, const core::Tensor& logits,
                         const core::Tensor& labels, const core::Tensor& loss,
                         const core::Tensor& dlogits);

// 3D U-Net DiceCELoss: (dice_loss + ce) / 2 on logits [N, C, spatial...]
// (or channels-last [N, spatial..., C]) and labels int32 [N, spatial...]. ce is the mean over
// voxels; dice per sample and class on softmax probabilities, (2 sum(p t) + 1e-6) / (sum t + sum p
// + 1e-6), background excluded, dice_loss = mean over N x (C - 1) of (1 - dice). workspace:
// DiceCrossEntropyWorkspaceElements (kernels/loss_shapes.h) floats (probabilities, sums).
void DiceCrossEntropy(const core::Tensor& logits, const core::Tensor& labels,
                      const core::Tensor& loss, const core::Tensor& dlogits,
                      const core::Tensor& workspace);

// BERT masked-LM loss on logits [predictions, vocab], labels int32, weights
// fp32 (1 real, 0 padding): sum(w * nll) / (sum(w) + 1e-5), as the reference's
// get_masked_lm_output.
void MaskedLmLoss(const core::Tensor& logits, const core::Tensor& labels,
                  const core::Tensor& weights, const core::Tensor& loss,
                  const core::Tensor& dlogits);

// Evaluation: argmax[r] = the first index of the largest value of row r of
// logits [rows, classes] (int32); NaN never counts as largest, and a row of
// NaN gives 0. On a device only the indices come back to the host, not the
// logits (BERT's are [predictions, 30522] per evaluation batch).
void ArgmaxRows(const core::Tensor& logits, const core::Tensor& argmax);

}  // namespace mlperf::cpu
