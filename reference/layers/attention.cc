#include "reference/layers/attention.h"

#include "base/check.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::layers {

void SelfAttention::Allocate(int64_t batch, int64_t seq, int64_t hidden, int64_t heads,
                             const std::string& name, const ModelArenas& arenas,
                             ParameterRegistry* registry, core::DType stored) {
  MLPERF_CHECK(heads > 0 && hidden % heads == 0);
  hidden_ = hidden;
  const int64_t rows = batch * seq;
  qkv_.Allocate(rows, hidden, 3 * hidden, Activation::kNone, name + ".qkv", arenas, registry,
                stored, true, ops::Fp8Linears());
  out_.Allocate(rows, hidden, hidden, Activation::kNone, name + ".output", arenas, registry, stored,
                true, ops::Fp8Linears());
  const core::Shape head_shape{batch, heads, seq, hidden / heads};
  core::Arena& a = *arenas.activations;
  for (core::Tensor* t : {&q_, &k_, &v_, &context_, &dq_, &dk_, &dv_, &dcontext_})
    *t = a.Allocate(head_shape, stored);
  probs_ = a.Allocate({batch, heads, seq, seq});
  workspace_ = a.Allocate({batch * heads * seq * seq});
  context_rows_ = a.Allocate({rows, hidden}, stored);
  dcontext_rows_ = a.Allocate({rows, hidden}, stored);
  dqkv_ = a.Allocate({rows, 3 * hidden}, stored);
}

void SelfAttention::Forward(const core::Tensor& x, const core::Tensor& mask,
                            const AttentionParams& p) {
  params_ = p;
  // Typed storage reaches the attention core too (cuda/attention_typed.h).
  params_.typed = out_.output().dtype() != core::DType::kF32;
  qkv_.Forward(x);
  ops::SplitHeads(qkv_.output(), 0, q_);
  ops::SplitHeads(qkv_.output(), hidden_, k_);
  ops::SplitHeads(qkv_.output(), 2 * hidden_, v_);
  ops::AttentionForward(params_, q_, k_, v_, mask, probs_, context_, workspace_);
  ops::MergeHeads(context_, context_rows_, 0);
  out_.Forward(context_rows_);
}

void SelfAttention::Backward(const core::Tensor& x, const core::Tensor& dy,
                             const core::Tensor& dx) {
  out_.Backward(context_rows_, dy, dcontext_rows_);
  ops::SplitHeads(dcontext_rows_, 0, dcontext_);
  ops::AttentionBackward(params_, q_, k_, v_, probs_, dcontext_, dq_, dk_, dv_, workspace_);
  ops::MergeHeads(dq_, dqkv_, 0);
  ops::MergeHeads(dk_, dqkv_, hidden_);
  ops::MergeHeads(dv_, dqkv_, 2 * hidden_);
  qkv_.Backward(x, dqkv_, dx);
}

}  // namespace mlperf::layers
