// BERT for pretraining as the MLPerf reference (language_model/tensorflow/
// bert, modeling.py and run_pretraining.py): token + position + token-type
// embeddings with LayerNorm, post-LN encoder layers (self-attention with the
// additive -10000 padding mask, residual, LayerNorm; tanh-GELU feed-forward,
// residual, LayerNorm), dropout on the hidden states and the attention
// probabilities in training only, the pooler (tanh on the first token), the
// masked-LM head (dense + GELU + LayerNorm, output tied to the word
// embeddings plus its own bias) and the next-sentence head. Loss: the
// weighted masked-LM loss sum(w * nll) / (sum(w) + 1e-5) plus the mean
// next-sentence cross-entropy. BERT-Large is the default; smaller members
// take fewer layers, a smaller width or fewer heads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/layers/attention.h"
#include "reference/layers/embedding.h"
#include "reference/layers/layer_norm.h"
#include "reference/layers/linear.h"
#include "reference/models/model.h"
#include "reference/models/upload_staging.h"

namespace mlperf::models {

struct BertConfig {
  int64_t vocab_size = 30522;
  int64_t hidden = 1024;
  int64_t layers = 24;
  int64_t heads = 16;
  int64_t intermediate = 4096;
  int64_t max_positions = 512;
  int64_t type_vocab = 2;
  int64_t seq_len = 512;         // tokens per sample (<= max_positions)
  int64_t max_predictions = 76;  // masked-LM slots per sample (per row when packed)
  // > 0: packed rows (NVIDIA's MLPerf BERT: 3), each holding up to this many
  // sequences that attend only to themselves, their positions restarting,
  // and a next-sentence prediction each; 0: one sample a row.
  int64_t packed_sequences = 0;
  float hidden_dropout = 0.1f;
  float attention_dropout = 0.1f;
  float layer_norm_epsilon = 1e-12f;
  core::Device device = core::Device::kCpu;
};

// The batch's inputs, in this order (the reference's TFRecord features),
// each in host memory:
//   input_ids, segment_ids     int32 [batch, seq]
//   input_mask                 fp32  [batch, seq] (1 token, 0 padding)
//   masked_lm_positions        int32 [batch, max_predictions] (within the sample)
//   masked_lm_ids              int32 [batch, max_predictions]
//   masked_lm_weights          fp32  [batch, max_predictions] (0 for unused slots)
//   next_sentence_labels       int32 [batch] (0: B follows A, 1: random B)
inline constexpr int kBertInputs = 7;
// Packed rows (BertConfig::packed_sequences = k), in this order:
//   input_ids, segment_ids     int32 [batch, seq]
//   input_mask                 fp32  [batch, seq] (each token's sequence: 1..k; 0 padding)
//   positions                  int32 [batch, seq] (restarting at each sequence)
//   masked_lm_positions, masked_lm_ids, masked_lm_weights  as above, per row
//   next_sentence_positions    int32 [batch, k] (each sequence's first token)
//   next_sentence_labels       int32 [batch, k]
//   next_sentence_weights      fp32  [batch, k] (1 per sequence, 0 for unused slots)
inline constexpr int kBertPackedInputs = 10;

class Bert final : public Model {
 public:
  // Starts from Initialize(seed).
  Bert(const BertConfig& config, int64_t batch_size, uint64_t seed = 0);
  ~Bert() override;

  // What a model of `config` at `batch_size` allocates (parameters,
  // gradients, activations), measured without allocating it.
  static int64_t ArenaBytes(const BertConfig& config, int64_t batch_size);
  // Its parameters (BERT-Large: 336,226,108 with the MLM and NSP heads).
  static int64_t ParameterCount(const BertConfig& config);

  const BertConfig& config() const { return config_; }
  // The type of the activations it may store reduced (stored_ below).
  core::DType activation_storage() const { return stored_; }

  // Truncated normal (stddev 0.02) weights and embeddings, zero biases,
  // LayerNorm scale 1 and shift 0: the reference's initialiser.
  void Initialize(uint64_t seed) override;
  void ForwardTrainAsync(const Batch& batch) override;
  bool CapturableStep() const override { return true; }
  void UploadTrainingBatch(const Batch& batch) override;
  void Backward() override;
  // Masked-LM accuracy sums over the first batch.count samples: weighted
  // correct predictions and the weights (the reference's eval metric).
  MetricSums EvaluateBatch(const Batch& batch) override;
  OwnedBatch SyntheticBatch() const override;

  // Inference-mode forward (no dropout) and both losses, for tests.
  float ForwardInference(const Batch& batch);
  const core::Tensor& mlm_logits() const { return mlm_logits_; }    // [batch * predictions, vocab]
  // [batch, 2]; packed: [batch * packed_sequences, 2]
  const core::Tensor& nsp_logits() const { return nsp_.output(); }
  const core::Tensor& mlm_loss() const { return mlm_loss_; }
  const core::Tensor& nsp_loss() const { return nsp_loss_; }

 private:
  struct MeasureOnly {};
  Bert(const BertConfig& config, int64_t batch_size, MeasureOnly);

  struct Layer {
    layers::SelfAttention attention;
    layers::LayerNorm attention_norm, output_norm;
    layers::Linear intermediate, output;
    core::Tensor attention_sum, output_sum;  // the residual sums each LayerNorm reads
  };

  void Build(const layers::ModelArenas& arenas);
  void Upload(const Batch& batch);
  void Forward(bool training);
  void Losses();
  // Dropout of `site` (a distinct Philox stream per site and step) from x
  // into y; a copy when not training or p is 0.
  void Dropout(float p, int64_t site, bool training, const core::Tensor& x,
               const core::Tensor& y) const;
  void DropoutBackward(float p, int64_t site, const core::Tensor& dy, const core::Tensor& dx) const;
  const core::Tensor& sequence_output() const;
  // Dropout sites per training step.
  int64_t DropoutSites() const;
  void NumBatchesTrackedSet() override;

  BertConfig config_;
  // The type of the activations BERT stores reduced on a CUDA device under
  // bf16/fp16 (kernels/precision.h): the feed-forward block's outputs, the
  // attention's projections, heads and context, the gradients that reach
  // them, and the attention core's scores, dropped probabilities and their
  // gradients (cuda/attention_typed.h). Each feeds only GEMM-class ops, which
  // round their inputs anyway, or is a GEMM's rounded output (or a
  // permutation of one): the values are those of fp32 storage. The residual
  // stream, the layer norms, the attention probabilities and the
  // pre-training heads stay fp32.
  core::DType stored_ = core::DType::kF32;
  int64_t rows_ = 0, predictions_ = 0;
  int64_t sentences_ = 0;       // next-sentence predictions per batch
  int64_t measured_bytes_ = 0;  // MeasureOnly
  // Dropout streams: from this seed and the training forwards so far
  // (num_batches_tracked, which the trainer's warm-up restores). Site s of
  // the n-th training forward uses Philox offset n * DropoutSites() + s; the
  // first term is counted on the device (dropout_base_, int64), so that a
  // step recorded as a CUDA graph draws new masks at each replay.
  uint64_t dropout_seed_ = 0;
  core::Tensor dropout_base_;

  layers::Embedding word_, position_, token_type_;
  layers::LayerNorm embedding_norm_;
  std::vector<Layer> layers_;
  layers::Linear pooler_, nsp_, transform_;
  layers::LayerNorm transform_norm_;
  core::Tensor mlm_bias_, dmlm_bias_;

  // Inputs on the model's device; mlm_rows_ holds each prediction's row in
  // the [batch * seq] token rows, first_rows_ each sample's first token.
  core::Tensor ids_, segment_ids_, mask_, mlm_rows_, mlm_ids_, mlm_weights_, nsp_labels_;
  core::Tensor position_ids_, first_rows_;
  core::Tensor nsp_weights_;  // packed rows only
  core::Tensor embedding_sum_, embedding_out_, first_tokens_, gathered_, mlm_logits_;
  core::Tensor mlm_argmax_;  // int32 [predictions]: evaluation's predicted ids
  core::Tensor mlm_loss_, nsp_loss_, dmlm_logits_, dnsp_logits_;
  core::Tensor dh_, ds_, dtmp_, dintermediate_, dgathered_, dtransform_, dpooled_, dfirst_;
  std::unique_ptr<UploadStaging> staging_;  // a CUDA model's per-step uploads
  std::vector<int32_t> host_rows_, host_first_;
};

}  // namespace mlperf::models
