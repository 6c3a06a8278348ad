// The attention steps that are not a GEMM, a softmax or a dropout (the whole
// attention is composed once over ops::, in kernels/composite.h).
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cpu {

// BERT's additive mask: scores[b, h, q, key] += (1 - mask[b, key]) * -10000.
// scores: [batch, heads, seq, seq]; mask: [batch, seq] fp32 of 0/1.
void AddKeyPaddingMask(const core::Tensor& scores, const core::Tensor& mask);

// Rows [batch * seq, width] (token-major, as linear layers produce them) to
// heads [batch, heads, seq, head_dim] from columns [column, column +
// heads * head_dim), and back (MergeHeads writes only those columns).
void SplitHeads(const core::Tensor& rows, int64_t column, const core::Tensor& heads);
void MergeHeads(const core::Tensor& heads, const core::Tensor& rows, int64_t column);

}  // namespace mlperf::cpu
