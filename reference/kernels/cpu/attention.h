// Scaled dot-product attention with a key padding mask, as BERT's reference:
//   scores = q k^T / sqrt(head_dim) + (1 - mask[b, key]) * -10000
//   probs = softmax(scores); out = dropout(probs) v.
// q, k, v, out: [batch, heads, seq, head_dim]; mask: [batch, seq] fp32 of 0/1.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cpu {

struct AttentionParams {
  float dropout = 0.0f;
  uint64_t seed = 0;
  uint64_t offset = 0;
};

// probs [batch, heads, seq, seq] keeps the pre-dropout softmax for the backward.
void AttentionForward(const AttentionParams& p, const core::Tensor& q, const core::Tensor& k,
                      const core::Tensor& v, const core::Tensor& mask, const core::Tensor& probs,
                      const core::Tensor& out, const core::Tensor& workspace);
// workspace: batch * heads * seq * seq floats (used by both calls).
void AttentionBackward(const AttentionParams& p, const core::Tensor& q, const core::Tensor& k,
                       const core::Tensor& v, const core::Tensor& probs, const core::Tensor& dout,
                       const core::Tensor& dq, const core::Tensor& dk, const core::Tensor& dv,
                       const core::Tensor& workspace);

}  // namespace mlperf::cpu
