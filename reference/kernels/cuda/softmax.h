// CUDA twin of cpu/softmax.h: one block per row, fp32 accumulation.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/attention_params.h"

namespace mlperf::cuda {

// BERT's attention rows fused (cuda/attention_typed.h), each the same fp32
// arithmetic as the ops it joins:
// probs = softmax(scores + key mask) per row of scores [b, h, t, t] (fp32,
// bf16 or fp16), mask [b, t]: AddKeyPaddingMask then SoftmaxForward
// without the masked copy; probs fp32; and in the same pass
// DropoutForward(p's draw, probs, dropped), dropped of any float type (the
// scores' own memory when of their type). Rows of at most 1024 elements.
void MaskedSoftmax(const core::Tensor& scores, const core::Tensor& mask, const core::Tensor& probs,
                   const AttentionParams& p, const core::Tensor& dropped);
// dscores = softmax backward of (probs, dropout backward of dattn), the
// dropout's mask drawn as DropoutBackward draws it over the flat [b*h*t*t]
// elements (none when p.dropout is 0); dattn and dscores of any float type,
// possibly the same tensor, rounded once when stored reduced; rows of at
// most 1024 elements.
void DropoutSoftmaxBackward(const AttentionParams& p, const core::Tensor& probs,
                            const core::Tensor& dattn, const core::Tensor& dscores);

}  // namespace mlperf::cuda
