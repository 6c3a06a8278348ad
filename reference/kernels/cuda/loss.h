// CUDA twins of cpu/loss.h (softmax cross-entropy with label smoothing, the
// 3D U-Net Dice + cross-entropy and BERT's masked-LM loss). One block per row in fp32; the scalar
// loss is a fixed-order reduction of per-row terms written on the device, so it is deterministic
// and needs no host round-trip. A label outside [0, classes) makes that row's loss (and so the
// total) NaN instead of aborting.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/loss_shapes.h"

namespace mlperf::cuda {

void SoftmaxCrossEntropy(float label_smoothing, float normalizer, const core::Tensor& logits,
                         const core::Tensor& labels, const core::Tensor& loss,
                         const core::Tensor& dlogits);

// Same workspace as the CPU twin (probabilities, per-class sums), on the device.
void DiceCrossEntropy(const core::Tensor& logits, const core::Tensor& labels,
                      const core::Tensor& loss, const core::Tensor& dlogits,
                      const core::Tensor& workspace);

void MaskedLmLoss(const core::Tensor& logits, const core::Tensor& labels,
                  const core::Tensor& weights, const core::Tensor& loss,
                  const core::Tensor& dlogits);

void ArgmaxRows(const core::Tensor& logits, const core::Tensor& argmax);

}  // namespace mlperf::cuda
