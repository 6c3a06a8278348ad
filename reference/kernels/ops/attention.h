// The attention's data movement and mask, declared once (kernels/op.h);
// kernels in cpu/attention.cc and cuda/attention.cu.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// BERT's additive mask: scores[b, h, q, key] += (1 - mask[b, key]) * -10000.
// scores: [batch, heads, seq, seq]; mask: [batch, seq] fp32 of 0/1.
inline Op<void(const core::Tensor& scores, const core::Tensor& mask)> AddKeyPaddingMask{
    "AddKeyPaddingMask"};

// Packed rows (several sequences in one row, each attending only to itself):
// scores[b, h, q, key] += -10000 unless mask[b, key] == mask[b, q]; mask:
// [batch, seq] fp32, each token's sequence (1, 2, ...; 0 for padding, which
// attends to padding, so no row is empty).
inline Op<void(const core::Tensor& scores, const core::Tensor& mask)> AddSequenceMask{
    "AddSequenceMask"};

// Decoders' causal mask: scores[b, h, q, key] = -inf where key > q, so the
// softmax gives those keys exactly 0. scores: [batch, heads, seq, seq], or
// [batch, heads, rows, keys] for the last `rows` queries of `keys` (a block
// of blocked_attention.h: key > q + keys - rows).
inline Op<void(const core::Tensor& scores)> CausalMask{"CausalMask"};

// Rows [batch * seq, width] (token-major, as linear layers produce them) to
// heads [batch, heads, seq, head_dim] from columns [column, column +
// heads * head_dim), and back (MergeHeads writes only those columns).
inline Op<void(const core::Tensor& rows, int64_t column, const core::Tensor& heads)> SplitHeads{
    "SplitHeads"};
inline Op<void(const core::Tensor& heads, const core::Tensor& rows, int64_t column)> MergeHeads{
    "MergeHeads"};

}  // namespace mlperf::ops
