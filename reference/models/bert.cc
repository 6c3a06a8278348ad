#include "reference/models/bert.h"

#include <cstring>

#include "base/check.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::models {

using core::DType;
using core::Tensor;

namespace {

// Dropout sites per step: the embeddings, then per layer the attention
// probabilities, the attention output and the feed-forward output.
constexpr int64_t kSitesPerLayer = 3;

// A copy between storage types widens (or rounds) as it copies.
void CopyOrCast(const Tensor& x, const Tensor& y) {
  if (x.data() == y.data()) return;
  if (x.dtype() == y.dtype()) return ops::Copy(x, y);
  ops::Cast(x, y);
}

}  // namespace

Bert::Bert(const BertConfig& config, int64_t batch_size, uint64_t seed)
    : Model(config.device, batch_size),
      config_(config),
      stored_(ops::ActivationStorageType(config.device)) {
  MLPERF_CHECK(config.layers >= 0 && config.hidden > 0 && config.heads > 0 &&
               config.hidden % config.heads == 0);
  MLPERF_CHECK(config.seq_len > 0 && config.seq_len <= config.max_positions);
  MLPERF_CHECK(config.max_predictions > 0 && config.max_predictions <= config.seq_len);
  MLPERF_CHECK(config.packed_sequences >= 0 && config.packed_sequences <= config.seq_len);
  rows_ = batch_size * config.seq_len;
  predictions_ = batch_size * config.max_predictions;
  sentences_ = batch_size * std::max<int64_t>(config.packed_sequences, 1);
  AllocateArenas([this](const layers::ModelArenas& arenas) { Build(arenas); });
  // Unpacked, constant index inputs: each row's position, each sample's
  // first row (packed rows bring both).
  if (config.packed_sequences == 0) {
    std::vector<int32_t> positions(rows_), first(batch_size);
    for (int64_t r = 0; r < rows_; ++r) positions[r] = static_cast<int32_t>(r % config.seq_len);
    for (int64_t b = 0; b < batch_size; ++b) first[b] = static_cast<int32_t>(b * config.seq_len);
    ops::CopyBytes(position_ids_.data(), device(), positions.data(), core::Device::kCpu,
                   position_ids_.bytes());
    ops::CopyBytes(first_rows_.data(), device(), first.data(), core::Device::kCpu,
                   first_rows_.bytes());
  }
  host_rows_.resize(predictions_);
  host_first_.resize(sentences_);
  if (device() != core::Device::kCpu) {
    size_t bytes = 0;
    for (const Tensor* t : {&ids_, &segment_ids_, &mask_, &mlm_rows_, &mlm_ids_, &mlm_weights_,
                            &nsp_labels_, &position_ids_, &first_rows_, &nsp_weights_})
      bytes += t->bytes();
    staging_ = std::make_unique<UploadStaging>(bytes);
  }
  Initialize(seed);
}

Bert::Bert(const BertConfig& config, int64_t batch_size, MeasureOnly)
    : Model(core::Device::kCpu, batch_size),
      config_(config),
      stored_(ops::ActivationStorageType(config.device)) {
  config_.device = core::Device::kCpu;
  rows_ = batch_size * config.seq_len;
  predictions_ = batch_size * config.max_predictions;
  sentences_ = batch_size * std::max<int64_t>(config.packed_sequences, 1);
  measured_bytes_ = static_cast<int64_t>(
      MeasureArenas(core::Device::kCpu, [this](const layers::ModelArenas& a) { Build(a); }));
}

int64_t Bert::ArenaBytes(const BertConfig& config, int64_t batch_size) {
  return Bert(config, batch_size, MeasureOnly{}).measured_bytes_;
}

int64_t Bert::ParameterCount(const BertConfig& c) {
  const int64_t h = c.hidden, norm = 2 * h;
  const int64_t embeddings = (c.vocab_size + c.max_positions + c.type_vocab) * h + norm;
  const int64_t layer = (3 * h * h + 3 * h) + (h * h + h) + norm +
                        (h * c.intermediate + c.intermediate) + (c.intermediate * h + h) + norm;
  const int64_t heads = (h * h + h) + (h * h + h + norm) + c.vocab_size + (2 * h + 2);
  return embeddings + c.layers * layer + heads;
}

Bert::~Bert() = default;

void Bert::Build(const layers::ModelArenas& a) {
  const BertConfig& c = config_;
  const int64_t batch = batch_size();
  const float eps = c.layer_norm_epsilon;
  core::Arena& acts = *a.activations;
  word_.Allocate(rows_, c.vocab_size, c.hidden, "bert.embeddings.word_embeddings", a, &registry_);
  position_.Allocate(rows_, c.max_positions, c.hidden, "bert.embeddings.position_embeddings", a,
                     &registry_);
  token_type_.Allocate(rows_, c.type_vocab, c.hidden, "bert.embeddings.token_type_embeddings", a,
                       &registry_);
  embedding_norm_.Allocate(rows_, c.hidden, eps, "bert.embeddings.LayerNorm", a, &registry_);
  layers_ = std::vector<Layer>(c.layers);
  for (int64_t l = 0; l < c.layers; ++l) {
    Layer& layer = layers_[l];
    const std::string name = "bert.encoder.layer." + std::to_string(l);
    // Packed rows' attention runs the fp32 core (AttentionParams::packed).
    layer.attention.Allocate(batch, c.seq_len, c.hidden, c.heads, name + ".attention", a,
                             &registry_, c.packed_sequences > 0 ? DType::kF32 : stored_);
    layer.attention_norm.Allocate(rows_, c.hidden, eps, name + ".attention.output.LayerNorm", a,
                                  &registry_);
    layer.intermediate.Allocate(rows_, c.hidden, c.intermediate, layers::Activation::kGelu,
                                name + ".intermediate.dense", a, &registry_, stored_, true,
                                ops::Fp8Linears());
    layer.output.Allocate(rows_, c.intermediate, c.hidden, layers::Activation::kNone,
                          name + ".output.dense", a, &registry_, stored_, true, ops::Fp8Linears());
    layer.output_norm.Allocate(rows_, c.hidden, eps, name + ".output.LayerNorm", a, &registry_);
    layer.attention_sum = acts.Allocate({rows_, c.hidden});
    layer.output_sum = acts.Allocate({rows_, c.hidden});
  }
  pooler_.Allocate(sentences_, c.hidden, c.hidden, layers::Activation::kTanh, "bert.pooler.dense",
                   a, &registry_);
  transform_.Allocate(predictions_, c.hidden, c.hidden, layers::Activation::kGelu,
                      "cls.predictions.transform.dense", a, &registry_);
  transform_norm_.Allocate(predictions_, c.hidden, eps, "cls.predictions.transform.LayerNorm", a,
                           &registry_);
  // The decoder's weight is the word embedding table; only its bias is new.
  const layers::Parameter bias = layers::AddParameter(
      a, &registry_, {c.vocab_size}, {.name = "cls.predictions.bias", .bias = true});
  mlm_bias_ = bias.value;
  dmlm_bias_ = bias.grad;
  nsp_.Allocate(sentences_, c.hidden, 2, layers::Activation::kNone, "cls.seq_relationship", a,
                &registry_);

  ids_ = acts.Allocate({rows_}, DType::kI32);
  segment_ids_ = acts.Allocate({rows_}, DType::kI32);
  mask_ = acts.Allocate({batch, c.seq_len});
  mlm_rows_ = acts.Allocate({predictions_}, DType::kI32);
  mlm_ids_ = acts.Allocate({predictions_}, DType::kI32);
  mlm_weights_ = acts.Allocate({predictions_});
  nsp_labels_ = acts.Allocate({sentences_}, DType::kI32);
  nsp_weights_ = acts.Allocate({c.packed_sequences > 0 ? sentences_ : 0});
  position_ids_ = acts.Allocate({rows_}, DType::kI32);
  first_rows_ = acts.Allocate({sentences_}, DType::kI32);
  embedding_sum_ = acts.Allocate({rows_, c.hidden});
  embedding_out_ = acts.Allocate({rows_, c.hidden});
  first_tokens_ = acts.Allocate({sentences_, c.hidden});
  gathered_ = acts.Allocate({predictions_, c.hidden});
  mlm_logits_ = acts.Allocate({predictions_, c.vocab_size});
  mlm_argmax_ = acts.Allocate({predictions_}, DType::kI32);
  dmlm_logits_ = acts.Allocate({predictions_, c.vocab_size});
  dnsp_logits_ = acts.Allocate({sentences_, 2});
  mlm_loss_ = acts.Allocate({1});
  nsp_loss_ = acts.Allocate({1});
  loss_ = acts.Allocate({1});
  dropout_base_ = acts.Allocate({1}, DType::kI64);
  for (Tensor* t : {&dh_, &ds_}) *t = acts.Allocate({rows_, c.hidden});
  dtmp_ = acts.Allocate({rows_, c.hidden}, stored_);
  dintermediate_ = acts.Allocate({rows_, c.intermediate}, stored_);
  for (Tensor* t : {&dgathered_, &dtransform_}) *t = acts.Allocate({predictions_, c.hidden});
  for (Tensor* t : {&dpooled_, &dfirst_}) *t = acts.Allocate({sentences_, c.hidden});
}

void Bert::Initialize(uint64_t seed) {
  std::vector<float> params(parameters().size(), 0.0f);
  for (size_t i = 0; i < registry_.parameters.size(); ++i) {
    const layers::Parameter& p = registry_.parameters[i];
    const Tensor value = HostParameter(p.value, params);
    if (p.batch_norm) {
      core::FillConstant(value, p.name.ends_with(".weight") ? 1.0f : 0.0f);
    } else if (p.bias) {
      core::FillConstant(value, 0.0f);
    } else {
      core::FillTruncatedNormal(value, 0.02f, {.seed = seed, .offset = static_cast<uint64_t>(i)});
    }
  }
  ParametersFromHost(params);
  dropout_seed_ = seed;
  set_num_batches_tracked(0);
}

void Bert::Upload(const Batch& batch) {
  if (batch.inputs.empty()) return;  // the batch already on the device
  const bool packed = config_.packed_sequences > 0;
  const size_t count = packed ? kBertPackedInputs : kBertInputs;
  MLPERF_CHECK_MSG(batch.inputs.size() == count, packed ? "packed BERT takes 10 inputs per batch"
                                                        : "BERT takes 7 inputs per batch");
  // Where each input goes, in the order of kBertInputs / kBertPackedInputs.
  std::vector<const Tensor*> targets = {&ids_,     &segment_ids_, &mask_,      &mlm_rows_,
                                        &mlm_ids_, &mlm_weights_, &nsp_labels_};
  if (packed) {
    targets = {&ids_,     &segment_ids_, &mask_,       &position_ids_, &mlm_rows_,
               &mlm_ids_, &mlm_weights_, &first_rows_, &nsp_labels_,   &nsp_weights_};
  }
  for (size_t i = 0; i < count; ++i)
    MLPERF_CHECK_MSG(batch.inputs[i].bytes() == targets[i]->bytes() &&
                         batch.inputs[i].dtype() == targets[i]->dtype(),
                     "a BERT input has the wrong size or type");
  // Positions within a row become rows of the [batch * seq] token rows: the
  // masked tokens', and packed, each sequence's first token's.
  const auto to_rows = [&](const Tensor& in, int64_t per_row, std::vector<int32_t>& rows) {
    const int32_t* positions = in.as<int32_t>();
    for (size_t i = 0; i < rows.size(); ++i) {
      MLPERF_CHECK_MSG(positions[i] >= 0 && positions[i] < config_.seq_len,
                       "a BERT position lies outside its row");
      rows[i] =
          static_cast<int32_t>(static_cast<int64_t>(i) / per_row * config_.seq_len) + positions[i];
    }
  };
  std::vector<const void*> sources(count);
  for (size_t i = 0; i < count; ++i) sources[i] = batch.inputs[i].data();
  const size_t mlm = packed ? 4 : 3;
  to_rows(batch.inputs[mlm], config_.max_predictions, host_rows_);
  sources[mlm] = host_rows_.data();
  if (packed) {
    const int32_t* positions = batch.inputs[3].as<int32_t>();
    for (int64_t i = 0; i < rows_; ++i)
      MLPERF_CHECK_MSG(positions[i] >= 0 && positions[i] < config_.max_positions,
                       "a packed BERT position is past the position table");
    to_rows(batch.inputs[7], config_.packed_sequences, host_first_);
    sources[7] = host_first_.data();
  }
  if (device() == core::Device::kCpu) {
    for (size_t i = 0; i < count; ++i)
      std::memcpy(targets[i]->data(), sources[i], targets[i]->bytes());
    return;
  }
  std::vector<UploadStaging::Part> parts(count);
  for (size_t i = 0; i < count; ++i)
    parts[i] = {targets[i]->data(), sources[i], targets[i]->bytes()};
  staging_->Upload(device(), parts);
}

void Bert::Dropout(float p, int64_t site, bool training, const Tensor& x, const Tensor& y) const {
  if (!training || p == 0.0f) return CopyOrCast(x, y);
  ops::DropoutForward(p, dropout_seed_, static_cast<uint64_t>(site), x, y,
                      dropout_base_.as<int64_t>());
}

void Bert::DropoutBackward(float p, int64_t site, const Tensor& dy, const Tensor& dx) const {
  if (p == 0.0f) return CopyOrCast(dy, dx);
  ops::DropoutBackward(p, dropout_seed_, static_cast<uint64_t>(site), dy, dx,
                       dropout_base_.as<int64_t>());
}

int64_t Bert::DropoutSites() const { return 1 + kSitesPerLayer * config_.layers; }

void Bert::NumBatchesTrackedSet() {
  const int64_t base = num_batches_tracked_ * DropoutSites();
  ops::CopyBytes(dropout_base_.data(), device(), &base, core::Device::kCpu, sizeof(base));
}

const Tensor& Bert::sequence_output() const {
  return layers_.empty() ? embedding_out_ : layers_.back().output_norm.output();
}

void Bert::Forward(bool training) {
  const BertConfig& c = config_;
  word_.Forward(ids_);
  position_.Forward(position_ids_);
  token_type_.Forward(segment_ids_);
  ops::Add(word_.output(), position_.output(), embedding_sum_);
  ops::Accumulate(token_type_.output(), embedding_sum_);
  embedding_norm_.Forward(embedding_sum_);
  Dropout(c.hidden_dropout, 0, training, embedding_norm_.output(), embedding_out_);
  const Tensor* h = &embedding_out_;
  for (size_t l = 0; l < layers_.size(); ++l) {
    Layer& layer = layers_[l];
    const int64_t site = 1 + kSitesPerLayer * static_cast<int64_t>(l);
    const AttentionParams attention{.dropout = training ? c.attention_dropout : 0.0f,
                                    .seed = dropout_seed_,
                                    .offset = static_cast<uint64_t>(site),
                                    .offset_base = dropout_base_.as<int64_t>(),
                                    .packed = c.packed_sequences > 0};
    layer.attention.Forward(*h, mask_, attention);
    Dropout(c.hidden_dropout, site + 1, training, layer.attention.output(), layer.attention_sum);
    ops::Accumulate(*h, layer.attention_sum);
    layer.attention_norm.Forward(layer.attention_sum);
    layer.intermediate.Forward(layer.attention_norm.output());
    layer.output.Forward(layer.intermediate.output());
    Dropout(c.hidden_dropout, site + 2, training, layer.output.output(), layer.output_sum);
    ops::Accumulate(layer.attention_norm.output(), layer.output_sum);
    layer.output_norm.Forward(layer.output_sum);
    h = &layer.output_norm.output();
  }
  // Next sentence: the pooler on each sample's (packed: sequence's) first token.
  ops::EmbeddingForward(first_rows_, *h, first_tokens_);
  pooler_.Forward(first_tokens_);
  nsp_.Forward(pooler_.output());
  // Masked LM: the masked rows (a gather), the transform, the tied decoder.
  ops::EmbeddingForward(mlm_rows_, *h, gathered_);
  transform_.Forward(gathered_);
  transform_norm_.Forward(transform_.output());
  ops::LinearForward(transform_norm_.output(), word_.table(), mlm_bias_, mlm_logits_);
}

void Bert::Losses() {
  ops::MaskedLmLoss(mlm_logits_, mlm_ids_, mlm_weights_, mlm_loss_, dmlm_logits_);
  // Packed: the mean over the real sequences (unused slots weigh 0), with
  // the masked-LM loss's sum(w) + 1e-5 (1e-7 from a plain mean at 100).
  if (config_.packed_sequences > 0) {
    ops::MaskedLmLoss(nsp_.output(), nsp_labels_, nsp_weights_, nsp_loss_, dnsp_logits_);
    return ops::Add(mlm_loss_, nsp_loss_, loss_);
  }
  ops::SoftmaxCrossEntropy(0.0f, static_cast<float>(batch_size()), nsp_.output(), nsp_labels_,
                           nsp_loss_, dnsp_logits_);
  ops::Add(mlm_loss_, nsp_loss_, loss_);
}

void Bert::UploadTrainingBatch(const Batch& batch) { Upload(batch); }

void Bert::ForwardTrainAsync(const Batch& batch) {
  Upload(batch);
  ++num_batches_tracked_;
  ops::AddInt64(dropout_base_, DropoutSites());
  Forward(/*training=*/true);
  Losses();
}

float Bert::ForwardInference(const Batch& batch) {
  Upload(batch);
  Forward(/*training=*/false);
  Losses();
  return ToHost(loss_)[0];
}

void Bert::Backward() {
  const BertConfig& c = config_;
  ScaleLossGradient(dmlm_logits_);
  ScaleLossGradient(dnsp_logits_);
  // Heads. The decoder's weight gradient goes into the word table's
  // gradient first; the embedding lookup adds to it at the end.
  ops::LinearBackward(transform_norm_.output(), word_.table(), dmlm_logits_, dtransform_,
                      word_.table_grad(), dmlm_bias_);
  transform_norm_.Backward(transform_.output(), dtransform_, dgathered_);
  transform_.Backward(gathered_, dgathered_, dtransform_);
  nsp_.Backward(pooler_.output(), dnsp_logits_, dpooled_);
  pooler_.Backward(first_tokens_, dpooled_, dfirst_);
  // The gathers' adjoints: prediction and first-token gradients summed back
  // into their rows.
  ops::EmbeddingBackward(mlm_rows_, dtransform_, dh_);
  ops::EmbeddingBackward(first_rows_, dfirst_, dh_, /*accumulate=*/true);
  for (size_t l = layers_.size(); l-- > 0;) {
    Layer& layer = layers_[l];
    const int64_t site = 1 + kSitesPerLayer * static_cast<int64_t>(l);
    const Tensor& input = l > 0 ? layers_[l - 1].output_norm.output() : embedding_out_;
    // output_sum = attention_norm + dropout(ffn(attention_norm)).
    layer.output_norm.Backward(layer.output_sum, dh_, ds_);
    DropoutBackward(c.hidden_dropout, site + 2, ds_, dtmp_);
    layer.output.Backward(layer.intermediate.output(), dtmp_, dintermediate_);
    layer.intermediate.Backward(layer.attention_norm.output(), dintermediate_, dh_);
    ops::Accumulate(ds_, dh_);
    // attention_sum = input + dropout(attention(input)).
    layer.attention_norm.Backward(layer.attention_sum, dh_, ds_);
    DropoutBackward(c.hidden_dropout, site + 1, ds_, dtmp_);
    layer.attention.Backward(input, dtmp_, dh_);
    ops::Accumulate(ds_, dh_);
  }
  // In place: dtmp_ may be stored reduced, the layer norm's gradient is fp32.
  DropoutBackward(c.hidden_dropout, 0, dh_, dh_);
  embedding_norm_.Backward(embedding_sum_, dh_, ds_);
  word_.Backward(ids_, ds_, /*accumulate=*/true);
  position_.Backward(position_ids_, ds_);
  token_type_.Backward(segment_ids_, ds_);
  NotifyGradientsReady(0);
}

MetricSums Bert::EvaluateBatch(const Batch& batch) {
  MLPERF_CHECK(batch.count >= 0 && batch.count <= batch_size());
  Upload(batch);
  Forward(/*training=*/false);
  // The predictions are found where the logits are; only they come back.
  ops::ArgmaxRows(mlm_logits_, mlm_argmax_);
  const std::vector<float> weights = ToHost(mlm_weights_);
  std::vector<int32_t> labels(predictions_), predicted(predictions_);
  ops::CopyBytes(labels.data(), core::Device::kCpu, mlm_ids_.data(), device(), mlm_ids_.bytes());
  ops::CopyBytes(predicted.data(), core::Device::kCpu, mlm_argmax_.data(), device(),
                 mlm_argmax_.bytes());
  MetricSums sums;
  for (int64_t i = 0; i < batch.count * config_.max_predictions; ++i) {
    if (weights[i] == 0.0f) continue;
    const bool correct = predicted[i] == labels[i];
    sums.numerator += weights[i] * (correct ? 1.0 : 0.0);
    sums.denominator += weights[i];
  }
  return sums;
}

OwnedBatch Bert::SyntheticBatch() const {
  const BertConfig& c = config_;
  const int64_t n = batch_size(), s = c.seq_len, p = c.max_predictions;
  OwnedBatch owned;
  int32_t* ids = owned.Add({n, s}, DType::kI32).as<int32_t>();
  int32_t* segments = owned.Add({n, s}, DType::kI32).as<int32_t>();
  float* mask = owned.Add({n, s}, DType::kF32).f32();
  // Packed: two sequences a row (of up to packed_sequences), halves of it.
  const int64_t k = c.packed_sequences, half = s / 2;
  if (k > 0) {
    int32_t* row_positions = owned.Add({n, s}, DType::kI32).as<int32_t>();
    for (int64_t i = 0; i < n * s; ++i) row_positions[i] = static_cast<int32_t>((i % s) % half);
  }
  int32_t* positions = owned.Add({n, p}, DType::kI32).as<int32_t>();
  int32_t* labels = owned.Add({n, p}, DType::kI32).as<int32_t>();
  float* weights = owned.Add({n, p}, DType::kF32).f32();
  auto draw = [](uint64_t stream, int64_t i, int64_t bound) {
    return static_cast<int32_t>(core::PhiloxBits(0x5eed, stream, static_cast<uint64_t>(i)) %
                                static_cast<uint64_t>(bound));
  };
  for (int64_t i = 0; i < n * s; ++i) {
    ids[i] = draw(0, i, c.vocab_size);
    segments[i] = (i % s) >= s / 2 ? 1 : 0;
    mask[i] = 1.0f;
    if (k > 0) {
      segments[i] = (i % s) % half >= half / 2 ? 1 : 0;
      mask[i] = (i % s) < half || k == 1 ? 1.0f : 2.0f;
    }
  }
  for (int64_t i = 0; i < n * p; ++i) {
    positions[i] = static_cast<int32_t>(i % p);
    labels[i] = draw(1, i, c.vocab_size);
    weights[i] = 1.0f;
  }
  if (k == 0) {
    int32_t* next = owned.Add({n}, DType::kI32).as<int32_t>();
    for (int64_t i = 0; i < n; ++i) next[i] = draw(2, i, 2);
    owned.batch.count = n;
    return owned;
  }
  int32_t* first = owned.Add({n, k}, DType::kI32).as<int32_t>();
  int32_t* next_labels = owned.Add({n, k}, DType::kI32).as<int32_t>();
  float* next_weights = owned.Add({n, k}, DType::kF32).f32();
  for (int64_t i = 0; i < n * k; ++i) {
    const bool used = i % k < std::min<int64_t>(k, 2);
    first[i] = static_cast<int32_t>(i % k == 1 ? half : 0);
    next_labels[i] = draw(2, i, 2);
    next_weights[i] = used ? 1.0f : 0.0f;
  }
  owned.batch.count = n;
  return owned;
}

}  // namespace mlperf::models
