// Operations composed of ops:: primitives, written once for every backend:
// the tensors' device picks the kernels of each step.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/attention_params.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::ops {

// Transposed convolution, the adjoint of the convolution `g` describes (g.in
// is the transposed conv's output size, g.out() its input size,
// g.in_channels its output channels; PyTorch weight [in, out, k...]): its
// forward is that convolution's data gradient and vice versa.
void ConvTransposeForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& w,
                          const core::Tensor& y, const core::Tensor& workspace);
void ConvTransposeBackwardData(const ConvGeometry& g, const core::Tensor& dy, const core::Tensor& w,
                               const core::Tensor& dx, const core::Tensor& workspace);
void ConvTransposeBackwardWeight(const ConvGeometry& g, const core::Tensor& x,
                                 const core::Tensor& dy, const core::Tensor& dw,
                                 const core::Tensor& workspace);

// Scaled dot-product attention with a key padding mask, as BERT's reference:
//   scores = q k^T / sqrt(head_dim) + (1 - mask[b, key]) * -10000
//   probs = softmax(scores); out = dropout(probs) v.
// q, k, v, out: [batch, heads, seq, head_dim]; mask: [batch, seq] fp32 of 0/1;
// probs [batch, heads, seq, seq] keeps the pre-dropout softmax for the
// backward; workspace: batch * heads * seq * seq floats (used by both calls).
void AttentionForward(const AttentionParams& p, const core::Tensor& q, const core::Tensor& k,
                      const core::Tensor& v, const core::Tensor& mask, const core::Tensor& probs,
                      const core::Tensor& out, const core::Tensor& workspace);
void AttentionBackward(const AttentionParams& p, const core::Tensor& q, const core::Tensor& k,
                       const core::Tensor& v, const core::Tensor& probs, const core::Tensor& dout,
                       const core::Tensor& dq, const core::Tensor& dk, const core::Tensor& dv,
                       const core::Tensor& workspace);

}  // namespace mlperf::ops
