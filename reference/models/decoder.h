// A decoder-only transformer for causal language modelling, the Llama family
// as transformers' LlamaForCausalLM and Megatron's GPT model configured for
// Llama lay it out: token embedding; pre-norm layers of RMSNorm, causal
// self-attention with grouped query heads and rotary positions (Llama 3.1's
// frequency scaling), a residual, RMSNorm, a SwiGLU feed-forward and a
// residual; a final RMSNorm and the output layer (untied, or tied to the
// embedding). No biases, no dropout. Loss: the mean next-token
// cross-entropy over every token of the batch. Parameter names are
// transformers' (model.layers.N.self_attn.q_proj.weight, lm_head.weight),
// so its checkpoints load by name.
//
// GPT's parts are configuration too (GPT-3 as Megatron builds it, GPT-2 as
// transformers does): LayerNorm with a shift instead of RMSNorm, learned
// absolute positions added to the token embedding instead of rotary ones, a
// feed-forward of two projections around GELU (tanh form) instead of
// SwiGLU (mlp.fc_in, mlp.fc_out), and biases on every projection.
//
// Tensor parallelism over the placement's ranks (Megatron's layout): each
// rank holds a slice of the query and key/value heads (q/k/v projections
// split by output rows), the matching input columns of o_proj, a slice of
// the SwiGLU width (gate/up by rows, down_proj by columns), and a slice of
// the vocabulary (embedding and lm_head by rows); the partial sums after
// o_proj, down_proj and the embedding, and the input gradients of the split
// projections, are all-reduced; the loss is the vocabulary-parallel
// cross-entropy. Every rank sees the same batch. So far on the CPU's
// communicators only, and without biases.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "reference/core/tensor.h"
#include "reference/layers/causal_attention.h"
#include "reference/layers/embedding.h"
#include "reference/layers/layer_norm.h"
#include "reference/layers/linear.h"
#include "reference/layers/lora.h"
#include "reference/layers/rms_norm.h"
#include "reference/models/model.h"

namespace mlperf::models {

// Llama 3's rotary frequency scaling (rope_scaling type "llama3"): factor
// 0 for none.
struct RopeScaling {
  double factor = 0.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_positions = 8192;
};

struct DecoderConfig {
  int64_t vocab_size = 128256;
  int64_t hidden = 4096;
  int64_t layers = 32;
  int64_t heads = 32;
  int64_t kv_heads = 8;
  int64_t intermediate = 14336;
  int64_t seq_len = 8192;  // tokens per sample
  // > 0: a token attends only to the earlier tokens of its own chunk of this
  // many (chunked attention; rotary positions count within the chunk, which
  // rotary embeddings' relative form makes the same); 0: the whole sample.
  int64_t attention_chunk = 0;
  // > 0: memory-efficient attention in blocks of this many queries, no
  // [seq, seq] probabilities kept per head (the backward recomputes them;
  // kernels/blocked_attention.h); 0: the probabilities kept. The same
  // values either way, up to summation order.
  int64_t attention_block = 0;
  // Activation recomputation (Megatron's full granularity): only each
  // layer's output is kept from the forward; the backward rebuilds a
  // layer's other activations from its input just before its gradients.
  // One layer's activations in memory instead of all; the same results.
  bool recompute = false;
  float norm_epsilon = 1e-5f;
  double rope_theta = 500000.0;
  RopeScaling rope_scaling{.factor = 8.0};
  bool tie_embeddings = false;
  float init_stddev = 0.02f;
  // GPT's parts instead of Llama's, each on its own:
  bool layer_norm = false;        // LayerNorm (scale and shift) instead of RMSNorm
  int64_t learned_positions = 0;  // > 0: a learned table of this many positions, not rotary
  bool gelu = false;              // fc_in, GELU (tanh form), fc_out instead of SwiGLU
  bool bias = false;              // biases on every projection
  // LoRA fine-tuning (lora.rank > 0; the Llama parts, one rank): adapters
  // on the attention's projections (lora_fused_qkv: one over q, k and v, the
  // MLPerf reference's qkv_proj, else one each; and o_proj), the base
  // frozen: its linear layers' weights stored in frozen_dtype, the
  // embedding and norm scales in fp32. lora.seed: the dropout streams';
  // lora.first_row: a data-parallel rank's first row in one process's batch
  // (its first sample x seq_len), so that it draws that process's masks.
  layers::LoraParams lora;
  bool lora_fused_qkv = true;
  core::DType frozen_dtype = core::DType::kBF16;
  // The loss as the mean over samples of each sample's mean over its counted
  // labels (transformers' Trainer with one sample per device: the LoRA
  // reference's), instead of the mean over every counted label of the
  // batch; the evaluation then sums the samples' means over samples.
  bool sample_mean_loss = false;
  core::Device device = core::Device::kCpu;
};

// Llama 3.1 8B as its published configuration gives it (attention in
// blocks of 128 queries: its 8,192-token samples would keep 8 GiB of
// probabilities per layer otherwise).
DecoderConfig Llama31_8B();
// Llama 2 70B, the base of the MLPerf LoRA benchmark, with its adapters as
// the reference configures them (rank 16, alpha 32, dropout 0.1, on the
// fused qkv_proj and o_proj; the base frozen in bf16; sequence 8192,
// attention in blocks of 128 queries).
DecoderConfig Llama2_70B_Lora();
// GPT-3 175B as the MLPerf reference trains it (Megatron: 96 layers of
// 12288, 96 heads, sequence 2048, the 50,257-token vocabulary padded to
// 51,200 for 8 tensor-parallel ranks, tied output layer, init std 0.006;
// attention in blocks of 128 queries).
DecoderConfig Gpt3_175B();

// The rotary inverse frequencies (head_dim / 2 of them), scaled.
std::vector<double> RotaryInverseFrequencies(int64_t head_dim, double theta,
                                             const RopeScaling& scaling);

// The batch's inputs, in this order, in host memory:
//   tokens  int32 [batch, seq]
//   labels  int32 [batch, seq] (the next token of each position, or
//           ops::kIgnoreLabel, -100, where the loss does not count: a
//           fine-tuning sample's prompt)
inline constexpr int kDecoderInputs = 2;

class Decoder final : public Model {
 public:
  Decoder(const DecoderConfig& config, int64_t batch_size, uint64_t seed = 0);
  // Tensor parallel over placement.world_size ranks (heads, kv_heads,
  // intermediate and vocab_size divisible by it), placement.comm between
  // them.
  Decoder(const DecoderConfig& config, int64_t batch_size, const Placement& placement,
          uint64_t seed = 0);
  ~Decoder() override;

  static int64_t ParameterCount(const DecoderConfig& config);
  // The bytes of each arena one of `tp` tensor-parallel ranks of this model
  // allocates at `batch_size`, measured without allocating them.
  static ArenaBytes Measure(const DecoderConfig& config, int64_t batch_size, int tp);
  const DecoderConfig& config() const { return config_; }
  int tensor_parallel() const override { return tp_; }
  int tensor_rank() const { return tp_rank_; }
  // The tensor-parallel ranks' communicator (null on one).
  dist::Communicator* tensor_comm() const { return comm_; }

  // The weights of a transformers Llama checkpoint (F32, BF16 or F16,
  // widened): `path` a .safetensors file, or a folder holding
  // model.safetensors.index.json and its shards (or model.safetensors), as
  // save_pretrained and the Hugging Face hub leave them. A tensor-parallel
  // rank reads its slices. Every parameter must be there with its whole
  // shape; an error names the file and the tensor, and leaves the model as
  // it was. (decoder_checkpoint.cc)
  // A layer's q_proj, k_proj and v_proj missing from the checkpoint are
  // read from its fused self_attn.qkv_proj.weight instead, their rows one
  // after the other (the MLPerf LoRA reference's fused-qkv Llama 2).
  absl::Status LoadHuggingFace(const std::string& path);
  // The inverse, as save_pretrained leaves a sharded checkpoint: shards
  // model-0000K-of-0000N.safetensors of at most about `shard_bytes` each in
  // `dtype` (F32 or BF16), model.safetensors.index.json and config.json (a
  // LlamaConfig), in a folder that must not exist yet. The Llama parts on
  // one rank, without adapters (a base checkpoint).
  absl::Status SaveHuggingFace(const std::string& dir, core::DType dtype,
                               int64_t shard_bytes) const;
  // The weights of a Megatron GPT checkpoint in its distributed Zarr form
  // (the GPT-3 reference's: a folder per tensor, the layers' tensors stacked
  // on a first dimension, queries, keys and values in one projection with
  // each head's three together), for the GPT configuration. Every tensor
  // must be there with the model's shapes; an error names the folder and
  // leaves the model as it was. (decoder_megatron.cc)
  absl::Status LoadMegatronGpt(const std::string& dir);
  // The inverse: this model's weights as such a checkpoint, in a folder that
  // must not exist yet (float32 arrays, one chunk each, and metadata.json).
  absl::Status SaveMegatronGpt(const std::string& dir) const;
  // The LoRA adapters as peft's save_pretrained leaves them, so that peft's
  // PeftModel.from_pretrained loads them onto the base: adapter_model.
  // safetensors (fp32, names base_model.model.<ours>) and adapter_config.
  // json, in a folder that must not exist yet. Under tensor parallelism
  // collective: the ranks' parts gathered whole, tensor rank 0 writing.
  // (decoder_checkpoint.cc)
  absl::Status SaveLoraAdapters(const std::string& dir) const;
  // And back (each tensor-parallel rank its parts): every adapter must be
  // there with its whole shape; an error names the file and leaves the
  // model as it was.
  absl::Status LoadLoraAdapters(const std::string& dir);

  // Weights N(0, init_stddev), norm scales 1; a tensor-parallel rank draws
  // the whole tensor and keeps its slice, so any layout starts from the
  // weights of one rank.
  void Initialize(uint64_t seed) override;
  void ForwardTrainAsync(const Batch& batch) override;
  void Backward() override;
  // The evaluation's log perplexity as sums: the cross-entropy summed over
  // the first batch.count samples' counted labels, and their count (with
  // sample_mean_loss: the samples' mean cross-entropies summed, and the
  // samples with a counted label).
  MetricSums EvaluateBatch(const Batch& batch) override;
  OwnedBatch SyntheticBatch() const override;

  // [batch * seq, vocab]: this rank's vocabulary columns under tensor
  // parallelism.
  const core::Tensor& logits() const { return logits_; }

  // Where this rank's slice of parameter i lies in the whole tensor:
  // dimension `dim` (-1: replicated) of `full` entries split in `parts`,
  // this rank's being part `part` (from first()); or, with `segments`, that
  // dimension holds these segments back to back, each split so and this
  // rank's part of each kept in order (a fused q/k/v adapter's B rows).
  struct Slice {
    int dim = -1;
    int64_t full = 0;
    std::vector<int64_t> segments;
    int part = 0, parts = 1;
    int64_t first() const { return part * (full / parts); }
  };
  const std::vector<Slice>& parameter_slices() const { return slices_; }
  // Of slices() (the trainable parameters), those every tensor-parallel
  // rank holds whole: what a global gradient norm counts once.
  std::vector<TensorSlice> ReplicatedSlices() const;
  // This rank's slice `s` (of shape `local`) of a whole 1-D or 2-D tensor
  // `full` of shape `whole`.
  static void TakeSlice(const std::vector<float>& full, const core::Shape& whole, const Slice& s,
                        const core::Tensor& local);
  // The inverse: `local` written into its place in `full`.
  static void PutSlice(const core::Tensor& local, const Slice& s, const core::Shape& whole,
                       std::vector<float>& full);

 private:
  // RMSNorm, or GPT's LayerNorm.
  struct Norm {
    layers::RmsNorm rms;
    layers::LayerNorm layer;
    bool is_layer = false;
    void Allocate(bool layer_norm, int64_t rows, int64_t features, float epsilon,
                  const std::string& name, const layers::ModelArenas& arenas,
                  layers::ParameterRegistry* registry);
    void Forward(const core::Tensor& x);
    void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx);
    const core::Tensor& output() const { return is_layer ? layer.output() : rms.output(); }
  };
  struct Layer {
    Norm input_norm, post_attention_norm;
    layers::CausalSelfAttention attention;
    layers::Linear gate, up, down;  // SwiGLU
    layers::Linear fc_in, fc_out;   // GELU
    core::Tensor attention_sum, output_sum, swiglu;
  };

  // Tensor `name` of `file` widened into `out` (whole's shape), or its
  // rows of a fused qkv_proj.weight when `file` has no such tensor.
  absl::Status ReadWeight(const io::SafetensorsFile& file, const std::string& name,
                          const core::Shape& whole, std::vector<float>& out) const;

  struct MeasureOnly {};
  Decoder(const DecoderConfig& config, int64_t batch_size, int tp, MeasureOnly);

  void Build(const layers::ModelArenas& arenas);
  // This rank's part of dimension `dim` (`full` entries) split over the
  // tensor-parallel ranks.
  Slice Split(int dim, int64_t full) const {
    return {.dim = dim, .full = full, .part = tp_rank_, .parts = tp_};
  }
  // Records the slice of the parameter registered last.
  void SliceLast(int dim, int64_t full);
  // Sums x over the tensor-parallel ranks (nothing on one).
  void AllReduce(const core::Tensor& x) const;
  void Losses(float normalizer, const core::Tensor& logits, const core::Tensor& labels,
              const core::Tensor& loss, const core::Tensor& dlogits);
  // With sample_mean_loss, the first `samples` samples one by one. train:
  // each normalised by its counted labels times `samples_normalizer`, its
  // loss added to loss_ (returns nothing); else unnormalised, returning
  // each sample's cross-entropy sum and counted labels.
  std::vector<std::pair<double, int64_t>> SampleLosses(const Batch& batch, int64_t samples,
                                                       float samples_normalizer, bool train);
  void Upload(const Batch& batch);
  // The labels of the batch's first `samples` samples that are not
  // ops::kIgnoreLabel.
  int64_t CountedLabels(const Batch& batch, int64_t samples) const;
  // The tokens one attention pass sees: the chunk, or the whole sample.
  int64_t span() const {
    return config_.attention_chunk > 0 ? config_.attention_chunk : config_.seq_len;
  }
  // train: the adapters' dropout applies.
  void Forward(bool train);
  // Layer l from its input; replay: again, as the forward ran it
  // (recomputation: the same dropout masks).
  void LayerForward(size_t l, bool train, bool replay);
  const core::Tensor& hidden_output() const;
  // The first layer's input: the token embedding (plus the positions').
  const core::Tensor& embedded() const;

  DecoderConfig config_;
  int64_t rows_ = 0;
  int tp_rank_ = 0, tp_ = 1;
  dist::Communicator* comm_ = nullptr;
  std::vector<Slice> slices_;
  ArenaBytes measured_;  // MeasureOnly
  layers::Embedding embed_, positions_;  // positions_: learned positions only
  core::Tensor position_ids_, embed_sum_;
  std::vector<Layer> layers_;
  Norm final_norm_;
  core::Tensor lm_head_, dlm_head_;  // empty when tied
  core::Tensor cos_, sin_;           // [span(), head_dim / 2]
  core::Tensor tokens_, labels_, logits_, dlogits_, loss_sum_;
  core::Tensor lse_, lse_gathered_;  // the vocabulary-parallel cross-entropy's
  core::Tensor dh_, ds_, dtmp_, dswiglu_, dgate_, dup_, dnormed_;
};

}  // namespace mlperf::models
