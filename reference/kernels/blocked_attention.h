// Memory-efficient attention (Rabe and Staats, 2021; the memory side of
// flash attention): the scaled dot-product attention of composite.h in
// blocks of query rows, so no [seq, seq] matrix per head is ever held. A
// block's scores against the keys it may see (causal: those up to its last
// query), their softmax and its product with the values are computed and
// dropped; the backward recomputes each block's probabilities instead of
// keeping them. Composed of ops:: primitives, so both backends run it.
// Without dropout or a padding mask (the decoders have neither).
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"
#include "reference/kernels/attention_params.h"

namespace mlperf::ops {

// Floats of scratch the two calls need: two blocks of scores per head.
int64_t BlockedAttentionWorkspace(int64_t batch, int64_t heads, int64_t seq, int64_t block);

// q, k, v, out (and the gradients): [batch, heads, seq, head_dim]; p.causal
// as composite.h's AttentionForward; `block` query rows at a time (the last
// block may be shorter).
void BlockedAttentionForward(const AttentionParams& p, int64_t block, const core::Tensor& q,
                             const core::Tensor& k, const core::Tensor& v, const core::Tensor& out,
                             const core::Tensor& workspace);
void BlockedAttentionBackward(const AttentionParams& p, int64_t block, const core::Tensor& q,
                              const core::Tensor& k, const core::Tensor& v,
                              const core::Tensor& dout, const core::Tensor& dq,
                              const core::Tensor& dk, const core::Tensor& dv,
                              const core::Tensor& workspace);

}  // namespace mlperf::ops
