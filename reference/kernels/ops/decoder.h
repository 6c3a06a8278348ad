// The decoder LLMs' pieces (Llama: RMSNorm, rotary position embedding,
// SwiGLU, grouped-query heads), declared once (kernels/op.h); kernels in
// cpu/decoder.cc and cuda/decoder.cu. Tensors fp32.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// Per row of x [rows, features]: y = x / sqrt(mean(x^2) + epsilon) * weight
// (Llama's RMSNorm, the statistic in fp64 here and fp32 on a device);
// inv_rms [rows] keeps 1 / sqrt(mean(x^2) + epsilon) for the backward.
inline Op<void(float epsilon, const core::Tensor& x, const core::Tensor& weight,
               const core::Tensor& y, const core::Tensor& inv_rms)>
    RmsNormForward{"RmsNormForward"};
// dx = r (w dy) - r^3 x mean(w dy x); dweight = sum over rows of dy x r
// (written, not accumulated). dx must not alias dy.
inline Op<void(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& weight,
               const core::Tensor& inv_rms, const core::Tensor& dx, const core::Tensor& dweight)>
    RmsNormBackward{"RmsNormBackward"};

// Rotary position embedding on heads x [batch, heads, seq, head_dim], the
// halves convention (GPT-NeoX, Llama in transformers and Megatron): for
// i < head_dim / 2 and position p, with c = cos[p, i], s = sin[p, i]
// ([seq, head_dim / 2]),
//   y[i] = x[i] c - x[i + half] s,   y[i + half] = x[i + half] c + x[i] s.
// `inverse` rotates by the opposite angle: the backward (the rotation is
// orthogonal). y may be x.
inline Op<void(bool inverse, const core::Tensor& x, const core::Tensor& cos,
               const core::Tensor& sin, const core::Tensor& y)>
    RotaryEmbedding{"RotaryEmbedding"};

// SwiGLU: y = silu(gate) * up, silu(g) = g / (1 + exp(-g)); its backward
// writes dgate = dy up silu'(gate) and dup = dy silu(gate).
inline Op<void(const core::Tensor& gate, const core::Tensor& up, const core::Tensor& y)>
    SwiGluForward{"SwiGluForward"};
inline Op<void(const core::Tensor& gate, const core::Tensor& up, const core::Tensor& dy,
               const core::Tensor& dgate, const core::Tensor& dup)>
    SwiGluBackward{"SwiGluBackward"};

// Grouped-query attention: key/value heads x [batch, kv_heads, seq, d]
// repeated to y [batch, heads, seq, d], query head h reading kv head
// h / (heads / kv_heads); the backward sums each group's gradients back.
inline Op<void(const core::Tensor& x, const core::Tensor& y)> RepeatHeads{"RepeatHeads"};
inline Op<void(const core::Tensor& dy, const core::Tensor& dx)> SumHeadGroups{"SumHeadGroups"};

// The decoders' loss: the next-token cross-entropy over rows of logits
// [rows, vocab] (no label smoothing), labels int32 [rows]:
//   loss = sum over rows of (logsumexp(z) - z[label]) / normalizer,
//   dlogits = (softmax(z) - onehot(label)) / normalizer.
// A label of kIgnoreLabel (PyTorch's ignore_index, a masked prompt) adds
// nothing and gets a zero gradient; the caller's normalizer counts the
// others. The exponentials in fp32 (rows as wide as a vocabulary), sums in
// fp64.
inline constexpr int32_t kIgnoreLabel = -100;
inline Op<void(float normalizer, const core::Tensor& logits, const core::Tensor& labels,
               const core::Tensor& loss, const core::Tensor& dlogits)>
    TokenCrossEntropy{"TokenCrossEntropy"};

// Tensor parallelism (Megatron's vocabulary-parallel layers): this rank's
// shard `table` holds rows [first, first + rows) of the vocabulary.
//   y[i] = table[ids[i] - first] for an id in the shard, 0 otherwise
//   (the ranks' outputs are then summed);
//   its backward sums dy's rows at their ids' shard rows into dtable
//   (overwritten, or added to with accumulate), ids elsewhere skipped.
inline Op<void(int64_t first, const core::Tensor& ids, const core::Tensor& table,
               const core::Tensor& y)>
    VocabShardEmbedding{"VocabShardEmbedding"};
inline Op<void(int64_t first, const core::Tensor& ids, const core::Tensor& dy,
               const core::Tensor& dtable, bool accumulate)>
    VocabShardEmbeddingBackward{"VocabShardEmbeddingBackward"};
// The cross-entropy over logits split by vocabulary across ranks:
// lse [rows] = each row's log-sum-exp over this rank's columns; the ranks'
// values (gathered [ranks, rows]) combine into the whole row's with
// CombineLogSumExp; then ShardedTokenCrossEntropy writes this rank's part
// of the loss, sum of -z[label] over the labels in its columns [first,
// first + columns), plus sum(lse) with add_lse (one rank), over
// normalizer, and its columns' gradient (softmax(z) - onehot) / normalizer;
// an ignored label's row adds nothing and gets a zero gradient.
inline Op<void(const core::Tensor& logits, const core::Tensor& lse)> RowLogSumExp{"RowLogSumExp"};
inline Op<void(const core::Tensor& gathered, const core::Tensor& lse)> CombineLogSumExp{
    "CombineLogSumExp"};
inline Op<void(float normalizer, int64_t first, bool add_lse, const core::Tensor& logits,
               const core::Tensor& labels, const core::Tensor& lse, const core::Tensor& loss,
               const core::Tensor& dlogits)>
    ShardedTokenCrossEntropy{"ShardedTokenCrossEntropy"};

}  // namespace mlperf::ops
