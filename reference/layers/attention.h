// Multi-head self-attention as in BERT: one fused query/key/value projection,
// scaled dot-product attention with a key padding mask and dropout on the
// probabilities (kernels/composite.h), and the output projection. Inputs and
// outputs are token rows [batch * seq, hidden].
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/kernels/attention_params.h"
#include "reference/layers/linear.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

class SelfAttention {
 public:
  // Registers name.qkv.{weight,bias} ([3 * hidden, hidden]: query, key and
  // value stacked) and name.output.{weight,bias}. `stored`: the type of the
  // projections' outputs, the heads, the context and their gradients
  // (Linear::Allocate); the probabilities stay fp32.
  void Allocate(int64_t batch, int64_t seq, int64_t hidden, int64_t heads, const std::string& name,
                const ModelArenas& arenas, ParameterRegistry* registry,
                core::DType stored = core::DType::kF32);
  // mask: [batch, seq], 1 for tokens and 0 for padding. `p` (dropout and its
  // Philox stream) is kept for the backward.
  void Forward(const core::Tensor& x, const core::Tensor& mask, const AttentionParams& p);
  // dy: gradient of output() (of its type), consumed; dx receives the input
  // gradient.
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx);

  const core::Tensor& output() const { return out_.output(); }

 private:
  int64_t hidden_ = 0;
  AttentionParams params_;
  Linear qkv_, out_;
  core::Tensor q_, k_, v_, probs_, context_, context_rows_, workspace_;
  core::Tensor dq_, dk_, dv_, dcontext_, dcontext_rows_, dqkv_;
};

}  // namespace mlperf::layers
