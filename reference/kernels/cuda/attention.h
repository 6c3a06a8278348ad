// CUDA twin of cpu/attention.h: scaled dot-product attention with a key
// padding mask, through cuBLAS strided-batched GEMMs (fp32, no TF32), a mask
// kernel, the softmax twin and the Philox dropout twin (same mask as the CPU).
//   scores = q k^T / sqrt(head_dim) + (1 - mask[b, key]) * -10000
//   probs = softmax(scores); out = dropout(probs) v.
// q, k, v, out: [batch, heads, seq, head_dim]; mask: [batch, seq] fp32 of 0/1.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/cpu/attention.h"

namespace mlperf::cuda {

using cpu::AttentionParams;

// probs [batch, heads, seq, seq] keeps the pre-dropout softmax for the backward.
void AttentionForward(const AttentionParams& p, const core::Tensor& q, const core::Tensor& k,
                      const core::Tensor& v, const core::Tensor& mask, const core::Tensor& probs,
                      const core::Tensor& out, const core::Tensor& workspace);
// workspace: batch * heads * seq * seq floats (used by both calls).
void AttentionBackward(const AttentionParams& p, const core::Tensor& q, const core::Tensor& k,
                       const core::Tensor& v, const core::Tensor& probs, const core::Tensor& dout,
                       const core::Tensor& dq, const core::Tensor& dk, const core::Tensor& dv,
                       const core::Tensor& workspace);

}  // namespace mlperf::cuda
