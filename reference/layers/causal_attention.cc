#include "reference/layers/causal_attention.h"

#include "base/check.h"
#include "reference/kernels/blocked_attention.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/attention.h"
#include "reference/kernels/ops/decoder.h"
#include "reference/kernels/precision.h"

namespace mlperf::layers {

void CausalSelfAttention::Allocate(const CausalAttentionShape& s, const std::string& name,
                                   const ModelArenas& arenas, ParameterRegistry* registry) {
  MLPERF_CHECK(s.heads > 0 && s.kv_heads > 0 && s.heads % s.kv_heads == 0 && s.head_dim > 0 &&
               s.head_dim % 2 == 0);
  const int64_t rows = s.batch * s.seq, width = s.heads * s.head_dim,
                kv_width = s.kv_heads * s.head_dim;
  const core::DType f32 = core::DType::kF32;
  rotary_ = s.rotary;
  query_block_ = s.query_block;
  const bool fp8 = ops::Fp8Linears();
  q_.Allocate(rows, s.hidden, width, Activation::kNone, name + ".q_proj", arenas, registry, f32,
              s.bias, fp8);
  k_.Allocate(rows, s.hidden, kv_width, Activation::kNone, name + ".k_proj", arenas, registry, f32,
              s.bias, fp8);
  v_.Allocate(rows, s.hidden, kv_width, Activation::kNone, name + ".v_proj", arenas, registry, f32,
              s.bias, fp8);
  o_.Allocate(rows, width, s.hidden, Activation::kNone, name + ".o_proj", arenas, registry, f32,
              s.bias, fp8);
  lora_ = s.lora.rank > 0;
  fused_qkv_ = s.fused_qkv;
  if (lora_) {
    // Each adapter its own dropout stream: seed, seed + 1, ... (4 at most).
    const auto with_seed = [&](uint64_t k) {
      LoraParams p = s.lora;
      p.seed += k;
      return p;
    };
    if (fused_qkv_) {
      qkv_lora_.Allocate(rows, s.hidden, width + 2 * kv_width, with_seed(0), name + ".qkv_proj",
                         arenas, registry);
    } else {
      q_lora_.Allocate(rows, s.hidden, width, with_seed(0), name + ".q_proj", arenas, registry);
      k_lora_.Allocate(rows, s.hidden, kv_width, with_seed(1), name + ".k_proj", arenas, registry);
      v_lora_.Allocate(rows, s.hidden, kv_width, with_seed(2), name + ".v_proj", arenas, registry);
    }
    LoraParams o = with_seed(3);
    if (s.all_heads > 0) {
      o.first_col = s.first_head * s.head_dim;
      o.full_in = s.all_heads * s.head_dim;
    }
    o_lora_.Allocate(rows, width, s.hidden, o, name + ".o_proj", arenas, registry);
  }
  core::Arena& a = *arenas.activations;
  const core::Shape heads{s.batch, s.heads, s.seq, s.head_dim};
  const core::Shape kv_heads{s.batch, s.kv_heads, s.seq, s.head_dim};
  for (core::Tensor* t :
       {&q_heads_, &k_rep_, &v_rep_, &context_, &dq_, &dk_rep_, &dv_rep_, &dcontext_})
    *t = a.Allocate(heads);
  for (core::Tensor* t : {&k_heads_, &v_heads_, &dk_, &dv_}) *t = a.Allocate(kv_heads);
  if (s.query_block > 0) {
    workspace_ =
        a.Allocate({ops::BlockedAttentionWorkspace(s.batch, s.heads, s.seq, s.query_block)});
  } else {
    probs_ = a.Allocate({s.batch, s.heads, s.seq, s.seq});
    workspace_ = a.Allocate({s.batch * s.heads * s.seq * s.seq});
  }
  for (core::Tensor* t : {&context_rows_, &dcontext_rows_, &dq_rows_})
    *t = a.Allocate({rows, width});
  dx_part_ = a.Allocate({rows, s.hidden});
  dk_rows_ = a.Allocate({rows, kv_width});
  dv_rows_ = a.Allocate({rows, kv_width});
}

std::vector<core::Tensor> CausalSelfAttention::PartialAdapterGradients() const {
  if (!lora_) return {};
  if (fused_qkv_) return {qkv_lora_.a_grad(), o_lora_.b_grad()};
  return {q_lora_.a_grad(), k_lora_.a_grad(), v_lora_.a_grad(), o_lora_.b_grad()};
}

void CausalSelfAttention::Forward(const core::Tensor& x, const core::Tensor& cos,
                                  const core::Tensor& sin, bool train, bool replay) {
  cos_ = cos;
  sin_ = sin;
  q_.Forward(x);
  k_.Forward(x);
  v_.Forward(x);
  if (lora_ && fused_qkv_) {
    const core::Tensor outputs[] = {q_.output(), k_.output(), v_.output()};
    qkv_lora_.Forward(x, outputs, train, replay);
  } else if (lora_) {
    q_lora_.Forward(x, std::span(&q_.output(), 1), train, replay);
    k_lora_.Forward(x, std::span(&k_.output(), 1), train, replay);
    v_lora_.Forward(x, std::span(&v_.output(), 1), train, replay);
  }
  ops::SplitHeads(q_.output(), 0, q_heads_);
  ops::SplitHeads(k_.output(), 0, k_heads_);
  ops::SplitHeads(v_.output(), 0, v_heads_);
  if (rotary_) {
    ops::RotaryEmbedding(false, q_heads_, cos, sin, q_heads_);
    ops::RotaryEmbedding(false, k_heads_, cos, sin, k_heads_);
  }
  ops::RepeatHeads(k_heads_, k_rep_);
  ops::RepeatHeads(v_heads_, v_rep_);
  if (query_block_ > 0) {
    ops::BlockedAttentionForward({.causal = true}, query_block_, q_heads_, k_rep_, v_rep_, context_,
                                 workspace_);
  } else {
    ops::AttentionForward({.causal = true}, q_heads_, k_rep_, v_rep_, core::Tensor(), probs_,
                          context_, workspace_);
  }
  ops::MergeHeads(context_, context_rows_, 0);
  o_.Forward(context_rows_);
  if (lora_) o_lora_.Forward(context_rows_, std::span(&o_.output(), 1), train, replay);
}

void CausalSelfAttention::Backward(const core::Tensor& x, const core::Tensor& dy,
                                   const core::Tensor& dx) {
  o_.Backward(context_rows_, dy, dcontext_rows_);
  if (lora_) o_lora_.Backward(context_rows_, std::span(&dy, 1), dcontext_rows_);
  ops::SplitHeads(dcontext_rows_, 0, dcontext_);
  if (query_block_ > 0) {
    ops::BlockedAttentionBackward({.causal = true}, query_block_, q_heads_, k_rep_, v_rep_,
                                  dcontext_, dq_, dk_rep_, dv_rep_, workspace_);
  } else {
    ops::AttentionBackward({.causal = true}, q_heads_, k_rep_, v_rep_, probs_, dcontext_, dq_,
                           dk_rep_, dv_rep_, workspace_);
  }
  ops::SumHeadGroups(dk_rep_, dk_);
  ops::SumHeadGroups(dv_rep_, dv_);
  if (rotary_) {
    ops::RotaryEmbedding(true, dq_, cos_, sin_, dq_);
    ops::RotaryEmbedding(true, dk_, cos_, sin_, dk_);
  }
  ops::MergeHeads(dq_, dq_rows_, 0);
  ops::MergeHeads(dk_, dk_rows_, 0);
  ops::MergeHeads(dv_, dv_rows_, 0);
  q_.Backward(x, dq_rows_, dx);
  k_.Backward(x, dk_rows_, dx_part_);
  ops::Accumulate(dx_part_, dx);
  v_.Backward(x, dv_rows_, dx_part_);
  ops::Accumulate(dx_part_, dx);
  if (lora_ && fused_qkv_) {
    const core::Tensor grads[] = {dq_rows_, dk_rows_, dv_rows_};
    qkv_lora_.Backward(x, grads, dx);
  } else if (lora_) {
    q_lora_.Backward(x, std::span(&dq_rows_, 1), dx);
    k_lora_.Backward(x, std::span(&dk_rows_, 1), dx);
    v_lora_.Backward(x, std::span(&dv_rows_, 1), dx);
  }
}

}  // namespace mlperf::layers
