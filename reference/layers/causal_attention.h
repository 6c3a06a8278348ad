// A decoder's causal self-attention with grouped query heads and rotary
// positions (Llama): query, key and value projections without bias (keys
// and values with kv_heads heads), the rotary embedding on queries and keys,
// each key/value head shared by heads / kv_heads query heads, causal scaled
// dot-product attention, and the output projection. GPT's form: biases on
// the projections and no rotary embedding (its positions are learned and
// added to the input). Inputs and outputs are token rows
// [batch * seq, hidden]; names as transformers' LlamaAttention (q_proj,
// k_proj, v_proj, o_proj).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/layers/linear.h"
#include "reference/layers/lora.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

// heads and kv_heads: this rank's (a tensor-parallel rank holds a slice of
// the heads; its output projection's sum is then partial).
struct CausalAttentionShape {
  int64_t batch = 1, seq = 1, hidden = 1, heads = 1, kv_heads = 1, head_dim = 1;
  bool bias = false;   // biases on the four projections (GPT)
  bool rotary = true;  // the rotary embedding on queries and keys (Llama)
  // > 0: memory-efficient attention in blocks of this many queries
  // (kernels/blocked_attention.h), no [seq, seq] matrix kept; 0: the
  // probabilities kept for the backward.
  int64_t query_block = 0;
  // LoRA adapters (lora.rank > 0) on the query/key/value projections (one
  // adapter over the three, the reference's qkv_proj, with fused_qkv; else
  // one each) and on o_proj; each adapter draws its dropout from lora.seed
  // plus its index (0 to 3).
  LoraParams lora;
  bool fused_qkv = true;
  // Under tensor parallelism: this rank's first head of all_heads (o_proj's
  // adapter reads those heads' columns; 0 all_heads: the rank has them all).
  int64_t first_head = 0, all_heads = 0;
};

class CausalSelfAttention {
 public:
  void Allocate(const CausalAttentionShape& shape, const std::string& name,
                const ModelArenas& arenas, ParameterRegistry* registry);
  // cos, sin: [seq, head_dim / 2], the rotary tables (unused without rotary).
  // `train`: the adapters' dropout applies; `replay`: with the masks of
  // the last forward (recomputation).
  void Forward(const core::Tensor& x, const core::Tensor& cos, const core::Tensor& sin,
               bool train = true, bool replay = false);
  // dy: gradient of output(); dx receives the input gradient (this rank's
  // heads' part of it under tensor parallelism).
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx);

  const core::Tensor& output() const { return o_.output(); }
  // Under tensor parallelism, the adapters' gradients of which this rank
  // computed only its part (whole parameters read through split ones: the
  // q/k/v adapters' A, o_proj's B), to be summed over the ranks after
  // Backward. Empty without adapters.
  std::vector<core::Tensor> PartialAdapterGradients() const;

 private:
  core::Tensor cos_, sin_;
  bool rotary_ = true;
  int64_t query_block_ = 0;
  bool lora_ = false, fused_qkv_ = true;
  LoraAdapter qkv_lora_, q_lora_, k_lora_, v_lora_, o_lora_;
  Linear q_, k_, v_, o_;
  // Heads: q (rotated), k and v (k rotated), k and v repeated to every query
  // head, the probabilities, the context.
  core::Tensor q_heads_, k_heads_, v_heads_, k_rep_, v_rep_, probs_, context_, context_rows_;
  core::Tensor workspace_;
  core::Tensor dq_, dk_rep_, dv_rep_, dk_, dv_, dcontext_, dcontext_rows_;
  core::Tensor dq_rows_, dk_rows_, dv_rows_, dx_part_;
};

}  // namespace mlperf::layers
