// BERT's attention core on a CUDA device with the tensors that feed its
// batched GEMMs kept in the compute precision `t` (bf16 or fp16): BERT's
// typed activation storage (kernels/precision.h). The rounding points and
// the values are those of ops::AttentionForward / AttentionBackward
// (kernels/composite.cc) under `t`; the [b, h, t, t] tensors move in half
// the bytes, with no conversion passes and the mask and dropout fused into
// the softmax passes:
//   scores (t)   = scale q k^T           (rounded by the GEMM as it stores)
//   probs (fp32) = softmax(scores + key mask)
//   dropped (t)  = dropout(probs)        (rounded as stored: a GEMM operand)
//   out          = dropped v, rounded
// and backward dA (t) = dout v^T; dS (t) = softmax backward of dropout
// backward of dA; dq = scale dS k, dk = scale dS^T q, dv = dropped^T dout,
// each rounded. q, k, v, out, dout, dq, dk, dv are [b, h, t, d] in fp32 or
// in `t` (BERT keeps them in `t`; fp32 ones are converted, or written fp32
// and rounded), probs fp32 [b, h, t, t], workspace fp32 with at least
// b*h*t*t elements.
#pragma once

#include "reference/core/dtype.h"
#include "reference/core/tensor.h"
#include "reference/kernels/attention_params.h"

namespace mlperf::cuda {

void AttentionForwardTyped(const AttentionParams& p, core::DType t, const core::Tensor& q,
                           const core::Tensor& k, const core::Tensor& v, const core::Tensor& mask,
                           const core::Tensor& probs, const core::Tensor& out,
                           const core::Tensor& workspace);
void AttentionBackwardTyped(const AttentionParams& p, core::DType t, const core::Tensor& q,
                            const core::Tensor& k, const core::Tensor& v, const core::Tensor& probs,
                            const core::Tensor& dout, const core::Tensor& dq,
                            const core::Tensor& dk, const core::Tensor& dv,
                            const core::Tensor& workspace);

}  // namespace mlperf::cuda
