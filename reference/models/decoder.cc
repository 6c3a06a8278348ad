#include "reference/models/decoder.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <string>

#include "base/check.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/dist/communicator.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/decoder.h"
#include "reference/kernels/precision.h"

namespace mlperf::models {

using core::DType;
using core::Tensor;

DecoderConfig Llama31_8B() { return DecoderConfig{.attention_block = 128}; }

DecoderConfig Llama2_70B_Lora() {
  return {.vocab_size = 32000,
          .hidden = 8192,
          .layers = 80,
          .heads = 64,
          .kv_heads = 8,
          .intermediate = 28672,
          .seq_len = 8192,
          .attention_block = 128,
          .rope_theta = 10000.0,
          .rope_scaling = {},
          .lora = {.rank = 16, .alpha = 32.0, .dropout = 0.1f}};
}

DecoderConfig Gpt3_175B() {
  return {.vocab_size = 51200,
          .hidden = 12288,
          .layers = 96,
          .heads = 96,
          .kv_heads = 96,
          .intermediate = 4 * 12288,
          .seq_len = 2048,
          .attention_block = 128,
          .rope_scaling = {},
          .tie_embeddings = true,
          .init_stddev = 0.006f,
          .layer_norm = true,
          .learned_positions = 2048,
          .gelu = true,
          .bias = true};
}

void Decoder::Norm::Allocate(bool layer_norm, int64_t rows, int64_t features, float epsilon,
                             const std::string& name, const layers::ModelArenas& arenas,
                             layers::ParameterRegistry* registry) {
  is_layer = layer_norm;
  if (is_layer)
    layer.Allocate(rows, features, epsilon, name, arenas, registry);
  else
    rms.Allocate(rows, features, epsilon, name, arenas, registry);
}

void Decoder::Norm::Forward(const Tensor& x) {
  if (is_layer)
    layer.Forward(x);
  else
    rms.Forward(x);
}

void Decoder::Norm::Backward(const Tensor& x, const Tensor& dy, const Tensor& dx) {
  if (is_layer)
    layer.Backward(x, dy, dx);
  else
    rms.Backward(x, dy, dx);
}

std::vector<double> RotaryInverseFrequencies(int64_t head_dim, double theta,
                                             const RopeScaling& scaling) {
  std::vector<double> inv(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) {
    double f = 1.0 / std::pow(theta, static_cast<double>(2 * i) / head_dim);
    if (scaling.factor > 0.0) {
      // Wavelengths shorter than original / high_freq_factor keep their
      // frequency, longer than original / low_freq_factor are divided by
      // the factor, and those between are interpolated.
      const double wavelength = 2.0 * std::numbers::pi / f;
      const double original = static_cast<double>(scaling.original_max_positions);
      if (wavelength > original / scaling.low_freq_factor) {
        f /= scaling.factor;
      } else if (wavelength >= original / scaling.high_freq_factor) {
        const double smooth = (original / wavelength - scaling.low_freq_factor) /
                              (scaling.high_freq_factor - scaling.low_freq_factor);
        f = (1.0 - smooth) * f / scaling.factor + smooth * f;
      }
    }
    inv[i] = f;
  }
  return inv;
}

Decoder::Decoder(const DecoderConfig& config, int64_t batch_size, uint64_t seed)
    : Decoder(config, batch_size, Placement{.device = config.device}, seed) {}

Decoder::Decoder(const DecoderConfig& config, int64_t batch_size, const Placement& placement,
                 uint64_t seed)
    : Model(config.device, batch_size),
      config_(config),
      tp_rank_(placement.rank),
      tp_(placement.world_size),
      comm_(placement.comm) {
  const DecoderConfig& c = config_;
  MLPERF_CHECK(c.layers >= 0 && c.hidden > 0 && c.heads > 0 && c.kv_heads > 0 &&
               c.hidden % c.heads == 0 && c.heads % c.kv_heads == 0 &&
               (c.hidden / c.heads) % 2 == 0 && c.seq_len > 0 && c.vocab_size > 0);
  MLPERF_CHECK_MSG(c.attention_chunk >= 0 && c.attention_chunk <= c.seq_len &&
                       (c.attention_chunk == 0 || c.seq_len % c.attention_chunk == 0),
                   "the attention chunk must divide the sequence");
  MLPERF_CHECK_MSG(tp_ >= 1 && tp_rank_ >= 0 && tp_rank_ < tp_ && (tp_ == 1 || comm_ != nullptr),
                   "a tensor-parallel decoder needs its ranks' communicator");
  MLPERF_CHECK_MSG(tp_ == 1 || c.device == core::Device::kCpu,
                   "tensor parallelism runs on the CPU's communicators only so far");
  MLPERF_CHECK_MSG(c.kv_heads % tp_ == 0 && c.intermediate % tp_ == 0 && c.vocab_size % tp_ == 0,
                   "the tensor-parallel ranks must divide the key/value heads, the SwiGLU width "
                   "and the vocabulary");
  MLPERF_CHECK_MSG(tp_ == 1 || !c.bias, "tensor parallelism with biases is not built yet");
  MLPERF_CHECK_MSG(
      c.lora.rank == 0 || (!c.bias && !c.layer_norm && c.learned_positions == 0 && !c.gelu),
      "LoRA adapts the Llama parts so far");
  MLPERF_CHECK_MSG(c.learned_positions == 0 || c.learned_positions >= c.seq_len,
                   "the learned positions must cover the sequence");
  rows_ = batch_size * c.seq_len;
  AllocateArenas([this](const layers::ModelArenas& arenas) { Build(arenas); });
  if (c.learned_positions > 0) {
    std::vector<int32_t> ids(rows_);
    for (int64_t r = 0; r < rows_; ++r) ids[r] = static_cast<int32_t>(r % c.seq_len);
    ops::CopyBytes(position_ids_.data(), device(), ids.data(), core::Device::kCpu,
                   position_ids_.bytes());
  }
  if (c.learned_positions > 0) {
    Initialize(seed);
    return;
  }
  // The rotary tables: the angle of position p and pair i is p * inv_freq[i].
  const int64_t half = c.hidden / c.heads / 2;
  const std::vector<double> inv = RotaryInverseFrequencies(2 * half, c.rope_theta, c.rope_scaling);
  std::vector<float> cos(span() * half), sin(span() * half);
  for (int64_t p = 0; p < span(); ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inv[i];
      cos[p * half + i] = static_cast<float>(std::cos(angle));
      sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
  ops::CopyBytes(cos_.data(), device(), cos.data(), core::Device::kCpu, cos_.bytes());
  ops::CopyBytes(sin_.data(), device(), sin.data(), core::Device::kCpu, sin_.bytes());
  Initialize(seed);
}

Decoder::Decoder(const DecoderConfig& config, int64_t batch_size, int tp, MeasureOnly)
    : Model(core::Device::kCpu, batch_size), config_(config), tp_(tp) {
  config_.device = core::Device::kCpu;
  rows_ = batch_size * config.seq_len;
  measured_ =
      MeasureEachArena(core::Device::kCpu, [this](const layers::ModelArenas& a) { Build(a); });
}

Model::ArenaBytes Decoder::Measure(const DecoderConfig& config, int64_t batch_size, int tp) {
  MLPERF_CHECK(tp >= 1 && config.heads % tp == 0 && config.kv_heads % tp == 0 &&
               config.intermediate % tp == 0 && config.vocab_size % tp == 0);
  return Decoder(config, batch_size, tp, MeasureOnly{}).measured_;
}

Decoder::~Decoder() = default;

int64_t Decoder::ParameterCount(const DecoderConfig& c) {
  const int64_t h = c.hidden, kv = c.kv_heads * (c.hidden / c.heads), i = c.intermediate;
  const int64_t norm = c.layer_norm ? 2 * h : h;
  const int64_t attention = 2 * h * h + 2 * h * kv + (c.bias ? 2 * h + 2 * kv : 0);
  const int64_t mlp =
      c.gelu ? 2 * h * i + (c.bias ? i + h : 0) : 3 * h * i + (c.bias ? 2 * i + h : 0);
  const int64_t r = c.lora.rank, width = h + 2 * kv;  // q, k and v outputs
  const int64_t adapters =
      r == 0 ? 0 : (c.lora_fused_qkv ? r * h : 3 * r * h) + r * width + 2 * r * h;  // + o_proj
  return c.vocab_size * h * (c.tie_embeddings ? 1 : 2) + c.learned_positions * h +
         c.layers * (attention + mlp + 2 * norm + adapters) + norm;
}

void Decoder::SliceLast(int dim, int64_t full) {
  slices_.resize(registry_.parameters.size() - 1);
  slices_.push_back(Split(dim, full));
}

void Decoder::Build(const layers::ModelArenas& a) {
  const DecoderConfig& c = config_;
  const float eps = c.norm_epsilon;
  const DType f32 = DType::kF32;
  const bool fp8 = ops::Fp8Linears();  // the blocks' linear layers in FP8 (--precision fp8)
  const int64_t head_dim = c.hidden / c.heads, vocab = c.vocab_size / tp_;
  const int64_t inter = c.intermediate / tp_;
  core::Arena& acts = *a.activations;
  // Under LoRA the base is frozen: the linear layers' weights stored in
  // frozen_dtype, the embeddings and norm scales in fp32.
  layers::ModelArenas base = a, lin = a;
  if (c.lora.rank > 0) {
    base.freeze = DType::kF32;
    lin.freeze = c.frozen_dtype;
  }
  slices_.clear();
  embed_.Allocate(rows_, vocab, c.hidden, "model.embed_tokens", base, &registry_);
  SliceLast(0, c.vocab_size);
  if (c.learned_positions > 0) {
    positions_.Allocate(rows_, c.learned_positions, c.hidden, "model.embed_positions", base,
                        &registry_);
    position_ids_ = acts.Allocate({rows_}, DType::kI32);
    embed_sum_ = acts.Allocate({rows_, c.hidden});
  }
  layers_ = std::vector<Layer>(c.layers);
  // With recomputation only each layer's output is kept; the rest of every
  // layer's activations share one layer's memory, rebuilt in the backward.
  if (c.recompute)
    for (Layer& layer : layers_) layer.output_sum = acts.Allocate({rows_, c.hidden});
  const size_t shared = acts.used();
  size_t shared_end = shared;
  for (int64_t l = 0; l < c.layers; ++l) {
    Layer& layer = layers_[l];
    if (c.recompute) acts.MoveTo(shared);
    const std::string name = "model.layers." + std::to_string(l);
    layer.input_norm.Allocate(c.layer_norm, rows_, c.hidden, eps, name + ".input_layernorm", base,
                              &registry_);
    layers::LoraParams lora = c.lora;
    lora.seed = c.lora.seed + 8 * static_cast<uint64_t>(l);  // each layer's own dropout streams
    const size_t attention_first = registry_.parameters.size();
    // Chunked attention: each chunk a sample of its own.
    layer.attention.Allocate({.batch = batch_size() * (c.seq_len / span()),
                              .seq = span(),
                              .hidden = c.hidden,
                              .heads = c.heads / tp_,
                              .kv_heads = c.kv_heads / tp_,
                              .head_dim = head_dim,
                              .bias = c.bias,
                              .rotary = c.learned_positions == 0,
                              .query_block = c.attention_block,
                              .lora = lora,
                              .fused_qkv = c.lora_fused_qkv,
                              .first_head = tp_rank_ * (c.heads / tp_),
                              .all_heads = c.heads},
                             name + ".self_attn", lin, &registry_);
    // q, k, v by output rows, o by input columns (no biases: tensor
    // parallelism with biases is refused); the adapters after them whole.
    if (!c.bias) {
      slices_.resize(attention_first);
      for (const auto& [dim, full] : {std::pair<int, int64_t>{0, c.heads * head_dim},
                                      {0, c.kv_heads * head_dim},
                                      {0, c.kv_heads * head_dim},
                                      {1, c.heads * head_dim}})
        slices_.push_back(Split(dim, full));
      // The adapters (A, B each): q/k/v's A whole and B by output rows (the
      // fused B by each of its three segments); o_proj's A by input
      // columns and B whole.
      if (c.lora.rank > 0) {
        const int64_t q = c.heads * head_dim, kv = c.kv_heads * head_dim;
        if (c.lora_fused_qkv) {
          slices_.push_back({});
          Slice b = Split(0, q + 2 * kv);
          b.segments = {q, kv, kv};
          slices_.push_back(b);
        } else {
          for (const int64_t full : {q, kv, kv}) {
            slices_.push_back({});
            slices_.push_back(Split(0, full));
          }
        }
        slices_.push_back(Split(1, q));
        slices_.push_back({});
      }
      MLPERF_CHECK(slices_.size() == registry_.parameters.size());
    }
    layer.post_attention_norm.Allocate(c.layer_norm, rows_, c.hidden, eps,
                                       name + ".post_attention_layernorm", base, &registry_);
    if (c.gelu) {
      layer.fc_in.Allocate(rows_, c.hidden, inter, layers::Activation::kGelu, name + ".mlp.fc_in",
                           lin, &registry_, f32, c.bias, fp8);
      SliceLast(0, c.intermediate);
      layer.fc_out.Allocate(rows_, inter, c.hidden, layers::Activation::kNone, name + ".mlp.fc_out",
                            lin, &registry_, f32, c.bias, fp8);
      SliceLast(1, c.intermediate);
    } else {
      layer.gate.Allocate(rows_, c.hidden, inter, layers::Activation::kNone,
                          name + ".mlp.gate_proj", lin, &registry_, f32, c.bias, fp8);
      SliceLast(0, c.intermediate);
      layer.up.Allocate(rows_, c.hidden, inter, layers::Activation::kNone, name + ".mlp.up_proj",
                        lin, &registry_, f32, c.bias, fp8);
      SliceLast(0, c.intermediate);
      layer.down.Allocate(rows_, inter, c.hidden, layers::Activation::kNone,
                          name + ".mlp.down_proj", lin, &registry_, f32, c.bias, fp8);
      SliceLast(1, c.intermediate);
      layer.swiglu = acts.Allocate({rows_, inter});
    }
    layer.attention_sum = acts.Allocate({rows_, c.hidden});
    if (!c.recompute) layer.output_sum = acts.Allocate({rows_, c.hidden});
    shared_end = std::max(shared_end, acts.used());
  }
  acts.MoveTo(shared_end);
  final_norm_.Allocate(c.layer_norm, rows_, c.hidden, eps, "model.norm", base, &registry_);
  if (!c.tie_embeddings) {
    const layers::Parameter head =
        layers::AddParameter(lin, &registry_, {vocab, c.hidden}, {.name = "lm_head.weight"});
    lm_head_ = head.value;
    dlm_head_ = head.grad;
    SliceLast(0, c.vocab_size);
  }
  slices_.resize(registry_.parameters.size());
  if (c.learned_positions == 0) {
    const int64_t half = head_dim / 2;
    cos_ = acts.Allocate({span(), half});
    sin_ = acts.Allocate({span(), half});
  }
  tokens_ = acts.Allocate({rows_}, DType::kI32);
  labels_ = acts.Allocate({rows_}, DType::kI32);
  logits_ = acts.Allocate({rows_, vocab});
  dlogits_ = acts.Allocate({rows_, vocab});
  loss_ = acts.Allocate({1});
  loss_sum_ = acts.Allocate({1});
  if (tp_ > 1) {
    lse_ = acts.Allocate({rows_});
    lse_gathered_ = acts.Allocate({tp_ * rows_});
  }
  for (Tensor* t : {&dh_, &ds_, &dtmp_, &dnormed_}) *t = acts.Allocate({rows_, c.hidden});
  dswiglu_ = acts.Allocate({rows_, inter});
  if (!c.gelu)
    for (Tensor* t : {&dgate_, &dup_}) *t = acts.Allocate({rows_, inter});
}

void Decoder::TakeSlice(const std::vector<float>& full, const core::Shape& whole, const Slice& s,
                        const Tensor& value) {
  if (s.dim < 0 || value.dim(s.dim) == s.full) {
    std::copy(full.begin(), full.end(), value.f32());
    return;
  }
  const int64_t rows = value.dim(0), columns = value.dim(1), full_columns = whole[1];
  if (!s.segments.empty()) {  // rows: this rank's part of each segment, in order
    MLPERF_CHECK(s.dim == 0);
    int64_t at = 0, row = 0;
    for (const int64_t segment : s.segments) {
      const int64_t part = segment / s.parts;
      std::copy_n(full.begin() + (at + s.part * part) * full_columns, part * full_columns,
                  value.f32() + row * columns);
      at += segment;
      row += part;
    }
    MLPERF_CHECK(row == rows && at == whole[0]);
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c)
      value.f32()[r * columns + c] = s.dim == 0 ? full[(s.first() + r) * full_columns + c]
                                                : full[r * full_columns + s.first() + c];
}

void Decoder::PutSlice(const Tensor& value, const Slice& s, const core::Shape& whole,
                       std::vector<float>& full) {
  const float* v = value.f32();
  if (s.dim < 0 || value.dim(s.dim) == s.full) {
    std::copy(v, v + value.numel(), full.begin());
    return;
  }
  const int64_t rows = value.dim(0), columns = value.dim(1), full_columns = whole[1];
  if (!s.segments.empty()) {
    int64_t at = 0, row = 0;
    for (const int64_t segment : s.segments) {
      const int64_t part = segment / s.parts;
      std::copy_n(v + row * columns, part * columns,
                  full.begin() + (at + s.part * part) * full_columns);
      at += segment;
      row += part;
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < columns; ++c)
      (s.dim == 0 ? full[(s.first() + r) * full_columns + c]
                  : full[r * full_columns + s.first() + c]) = v[r * columns + c];
}

void Decoder::Initialize(uint64_t seed) {
  std::vector<float> params(parameters().size(), 0.0f);
  std::vector<float> frozen;  // one frozen parameter's values, then stored in its type
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    if (!p.trainable) frozen.assign(p.value.numel(), 0.0f);
    const Tensor value = p.trainable ? HostParameter(p.value, params)
                                     : Tensor(frozen.data(), p.value.shape(), DType::kF32);
    const core::RngStream stream{.seed = seed, .offset = static_cast<uint64_t>(i)};
    if (p.bias || p.batch_norm) {
      // Biases and norm shifts 0, norm scales 1.
      core::FillConstant(value, p.batch_norm && !p.name.ends_with(".bias") ? 1.0f : 0.0f);
      if (!p.trainable) SetParameter(p, frozen);
      continue;
    }
    // The whole tensor, then this rank's part of it.
    const Slice& s = slices_[i];
    const core::Shape whole = s.dim < 0 ? value.shape() : value.shape().With(s.dim, s.full);
    std::vector<float> full(whole.numel());
    const Tensor all(full.data(), whole, DType::kF32);
    if (p.name.ends_with(".lora_A.weight")) {
      // peft's adapters: A as nn.Linear's default (Kaiming uniform, a =
      // sqrt(5): bound 1 / sqrt(in)), B zero, so training starts at the base.
      const float bound = 1.0f / std::sqrt(static_cast<float>(whole[1]));
      core::FillUniform(all, -bound, bound, stream);
    } else if (p.name.ends_with(".lora_B.weight")) {
      core::FillConstant(all, 0.0f);
    } else {
      core::FillNormal(all, 0.0f, config_.init_stddev, stream);
    }
    TakeSlice(full, whole, s, value);
    if (!p.trainable) SetParameter(p, frozen);
  }
  ParametersFromHost(params);
}

void Decoder::Upload(const Batch& batch) {
  if (batch.inputs.empty()) return;  // the batch already on the device
  MLPERF_CHECK_MSG(batch.inputs.size() == kDecoderInputs, "a decoder takes 2 inputs per batch");
  const Tensor* targets[kDecoderInputs] = {&tokens_, &labels_};
  for (int i = 0; i < kDecoderInputs; ++i) {
    const Tensor& in = batch.inputs[i];
    MLPERF_CHECK_MSG(in.bytes() == targets[i]->bytes() && in.dtype() == DType::kI32,
                     "a decoder input has the wrong size or type");
    const int32_t* ids = in.as<int32_t>();
    for (int64_t r = 0; r < rows_; ++r)
      MLPERF_CHECK_MSG(
          (ids[r] >= 0 && ids[r] < config_.vocab_size) || (i == 1 && ids[r] == ops::kIgnoreLabel),
          "a token id lies outside the vocabulary");
    ops::CopyBytes(targets[i]->data(), device(), in.data(), core::Device::kCpu, in.bytes());
  }
}

std::vector<TensorSlice> Decoder::ReplicatedSlices() const {
  const std::vector<TensorSlice> trainable = slices();
  std::vector<TensorSlice> whole;
  size_t k = 0;  // trainable parameters come in registry order
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    if (!registry_.parameters[i].trainable) continue;
    if (slices_[i].dim < 0) whole.push_back(trainable[k]);
    ++k;
  }
  return whole;
}

const Tensor& Decoder::embedded() const {
  return config_.learned_positions > 0 ? embed_sum_ : embed_.output();
}

const Tensor& Decoder::hidden_output() const {
  return layers_.empty() ? embedded() : layers_.back().output_sum;
}

void Decoder::AllReduce(const Tensor& x) const {
  if (tp_ > 1) comm_->AllReduceSum(x.f32(), x.numel());
}

void Decoder::LayerForward(size_t l, bool train, bool replay) {
  Layer& layer = layers_[l];
  const Tensor& x = l == 0 ? embedded() : layers_[l - 1].output_sum;
  layer.input_norm.Forward(x);
  layer.attention.Forward(layer.input_norm.output(), cos_, sin_, train, replay);
  AllReduce(layer.attention.output());
  ops::Add(x, layer.attention.output(), layer.attention_sum);
  layer.post_attention_norm.Forward(layer.attention_sum);
  const Tensor& normed = layer.post_attention_norm.output();
  if (config_.gelu) {
    layer.fc_in.Forward(normed);
    layer.fc_out.Forward(layer.fc_in.output());
  } else {
    layer.gate.Forward(normed);
    layer.up.Forward(normed);
    ops::SwiGluForward(layer.gate.output(), layer.up.output(), layer.swiglu);
    layer.down.Forward(layer.swiglu);
  }
  const Tensor& mlp = config_.gelu ? layer.fc_out.output() : layer.down.output();
  AllReduce(mlp);
  ops::Add(layer.attention_sum, mlp, layer.output_sum);
}

void Decoder::Forward(bool train) {
  const int64_t first_token = tp_rank_ * (config_.vocab_size / tp_);
  ops::VocabShardEmbedding(first_token, tokens_, embed_.table(), embed_.output());
  AllReduce(embed_.output());
  if (config_.learned_positions > 0) {
    positions_.Forward(position_ids_);
    ops::Add(embed_.output(), positions_.output(), embed_sum_);
  }
  for (size_t l = 0; l < layers_.size(); ++l) LayerForward(l, train, /*replay=*/false);
  final_norm_.Forward(hidden_output());
  const Tensor& head = config_.tie_embeddings ? embed_.table() : lm_head_;
  ops::LinearForward(final_norm_.output(), head, Tensor(), logits_);
}

void Decoder::ForwardTrainAsync(const Batch& batch) {
  Upload(batch);
  ++num_batches_tracked_;
  Forward(/*train=*/true);
  // The mean over the labels that count (a batch of masked prompts alone:
  // loss and gradients 0).
  if (config_.sample_mean_loss) {
    ops::Fill(loss_, 0.0f);
    SampleLosses(batch, batch_size(), static_cast<float>(batch_size()), /*train=*/true);
    return;
  }
  const int64_t counted = CountedLabels(batch, batch_size());
  Losses(static_cast<float>(std::max<int64_t>(1, counted)), logits_, labels_, loss_, dlogits_);
}

void Decoder::Backward() {
  ScaleLossGradient(dlogits_);
  const bool tied = config_.tie_embeddings;
  // The output layer's weight gradient; tied, it is the embedding table's,
  // to which the lookup's gradient is added at the end.
  ops::LinearBackward(final_norm_.output(), tied ? embed_.table() : lm_head_, dlogits_, dnormed_,
                      tied ? embed_.table_grad() : dlm_head_, Tensor());
  AllReduce(dnormed_);
  final_norm_.Backward(hidden_output(), dnormed_, dh_);
  for (size_t l = layers_.size(); l-- > 0;) {
    Layer& layer = layers_[l];
    const Tensor& x = l == 0 ? embedded() : layers_[l - 1].output_sum;
    // The last layer's activations are still there; the others rebuilt
    // (the adapters' dropout drawing the forward's masks again).
    if (config_.recompute && l + 1 < layers_.size())
      LayerForward(l, /*train=*/true, /*replay=*/true);
    const Tensor& normed = layer.post_attention_norm.output();
    if (config_.gelu) {
      // output_sum = attention_sum + fc_out(gelu(fc_in(n))), n its norm.
      layer.fc_out.Backward(layer.fc_in.output(), dh_, dswiglu_);
      layer.fc_in.Backward(normed, dswiglu_, dnormed_);
    } else {
      // output_sum = attention_sum + down(swiglu(gate(n), up(n))).
      layer.down.Backward(layer.swiglu, dh_, dswiglu_);
      ops::SwiGluBackward(layer.gate.output(), layer.up.output(), dswiglu_, dgate_, dup_);
      layer.gate.Backward(normed, dgate_, dnormed_);
      layer.up.Backward(normed, dup_, dtmp_);
      ops::Accumulate(dtmp_, dnormed_);
    }
    AllReduce(dnormed_);
    layer.post_attention_norm.Backward(layer.attention_sum, dnormed_, ds_);
    ops::Accumulate(dh_, ds_);
    // attention_sum = x + attention(input_norm(x)).
    layer.attention.Backward(layer.input_norm.output(), ds_, dnormed_);
    AllReduce(dnormed_);
    for (const Tensor& partial : layer.attention.PartialAdapterGradients()) AllReduce(partial);
    layer.input_norm.Backward(x, dnormed_, dh_);
    ops::Accumulate(ds_, dh_);
  }
  if (!embed_.table_grad().empty())  // frozen under LoRA
    ops::VocabShardEmbeddingBackward(tp_rank_ * (config_.vocab_size / tp_), tokens_, dh_,
                                     embed_.table_grad(), /*accumulate=*/tied);
  if (config_.learned_positions > 0) positions_.Backward(position_ids_, dh_);
  NotifyGradientsReady(0);
}

OwnedBatch Decoder::SyntheticBatch() const {
  const int64_t n = batch_size(), s = config_.seq_len;
  OwnedBatch owned;
  int32_t* tokens = owned.Add({n, s}, DType::kI32).as<int32_t>();
  int32_t* labels = owned.Add({n, s}, DType::kI32).as<int32_t>();
  for (int64_t i = 0; i < n * s; ++i) {
    tokens[i] = static_cast<int32_t>(core::PhiloxBits(0x5eed, 0, static_cast<uint64_t>(i)) %
                                     static_cast<uint64_t>(config_.vocab_size));
    labels[i] = static_cast<int32_t>(core::PhiloxBits(0x5eed, 1, static_cast<uint64_t>(i)) %
                                     static_cast<uint64_t>(config_.vocab_size));
  }
  owned.batch.count = n;
  return owned;
}

}  // namespace mlperf::models
