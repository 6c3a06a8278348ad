// End to end: a small pre-LN transformer encoder (token + position
// embeddings, 2 x [LN, multi-head attention with a key padding mask,
// residual, LN, MLP with tanh-GELU, residual], final LN and a masked-token
// head) built from reference/layers/ as a models::Model, trained with LAMB on
// BERT's masked-LM loss, reaches the stated accuracy on held-out sequences.
// The data: variable-length sequences of token pairs (a, f(a)) with f a fixed
// bijection, padded to a fixed length; some tokens are replaced by [MASK] and
// must be recovered, which needs attention to the partner position (and f or
// its inverse). Parameters, gradients and activations live in the model's
// arenas; the training loop allocates nothing.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"
#include "reference/layers/attention.h"
#include "reference/layers/embedding.h"
#include "reference/layers/layer_norm.h"
#include "reference/layers/linear.h"
#include "reference/models/model.h"
#include "reference/optim/schedules.h"

namespace mlperf {
namespace {

using core::Tensor;

// Tokens: 0 padding, 1 [MASK], 2..15 symbols.
constexpr int32_t kPad = 0, kMask = 1, kFirstSymbol = 2, kSymbols = 14;
constexpr int64_t kVocab = kFirstSymbol + kSymbols;
constexpr int64_t kBatch = 32, kSeq = 12, kHidden = 32, kHeads = 2;
constexpr int64_t kFfn = 4 * kHidden, kLayers = 2, kPredictions = 3;
constexpr int64_t kRows = kBatch * kSeq;
constexpr float kLnEpsilon = 1e-12f;  // BERT's LayerNorm epsilon
constexpr double kTargetAccuracy = 0.95;

int32_t Partner(int32_t a) { return kFirstSymbol + ((a - kFirstSymbol) * 3 + 1) % kSymbols; }

// One training example: pairs (a, Partner(a)) for a random number of pairs,
// then padding; up to kPredictions masked tokens (the third only in long
// sequences, otherwise a zero-weight slot).
struct Example {
  int32_t ids[kSeq];
  float mask[kSeq];
  int64_t positions[kPredictions];
  int32_t labels[kPredictions];
  float weights[kPredictions];
};

Example MakeExample(uint64_t seed, uint64_t index) {
  Example e;
  uint64_t draw = 0;
  auto next = [&] { return core::PhiloxBits(seed, index, draw++); };
  const int64_t pairs = 3 + next() % (kSeq / 2 - 2);  // 3..6 pairs: length 6..12
  for (int64_t i = 0; i < kSeq; ++i) {
    e.ids[i] = kPad;
    e.mask[i] = i < 2 * pairs ? 1.0f : 0.0f;
  }
  for (int64_t p = 0; p < pairs; ++p) {
    const int32_t a = kFirstSymbol + static_cast<int32_t>(next() % kSymbols);
    e.ids[2 * p] = a;
    e.ids[2 * p + 1] = Partner(a);
  }
  // Distinct pairs; one element of each is masked, its partner stays visible.
  int64_t chosen[kPredictions];
  const int64_t used = pairs >= 5 ? 3 : 2;
  for (int64_t k = 0; k < kPredictions; ++k) {
    if (k >= used) {
      e.positions[k] = 0;
      e.labels[k] = kPad;
      e.weights[k] = 0.0f;
      continue;
    }
    int64_t p;
    do {
      p = static_cast<int64_t>(next() % pairs);
    } while (std::find(chosen, chosen + k, p) != chosen + k);
    chosen[k] = p;
    const int64_t pos = 2 * p + static_cast<int64_t>(next() % 2);
    e.positions[k] = pos;
    e.labels[k] = e.ids[pos];
    e.weights[k] = 1.0f;
  }
  for (int64_t k = 0; k < used; ++k) e.ids[e.positions[k]] = kMask;
  return e;
}

struct Block {
  layers::LayerNorm ln1, ln2;
  layers::SelfAttention attention;
  layers::Linear ffn1, ffn2;
  Tensor h1, h2;  // after the attention residual, after the MLP residual
};

// Batch inputs: ids [rows] int32, mask [batch, seq], positions [predictions]
// int32 (row of each prediction), labels [predictions] int32, weights
// [predictions] (0 for an unused slot).
class Encoder final : public models::Model {
 public:
  Encoder() : Model(core::Device::kCpu, kBatch) {
    AllocateArenas([this](const layers::ModelArenas& a) { Build(a); });
    int32_t* pos = static_cast<int32_t*>(position_ids_.data());
    for (int64_t r = 0; r < kRows; ++r) pos[r] = static_cast<int32_t>(r % kSeq);
  }

  void Initialize(uint64_t) override {
    // BERT reference: truncated normal(0.02) weights and embeddings, zero
    // biases, LayerNorm gamma 1 and beta 0.
    std::vector<float> params(parameters().size(), 0.0f);
    uint64_t offset = 0;
    for (const layers::Parameter& p : registry_.parameters) {
      const Tensor host = HostParameter(p.value, params);
      if (!p.batch_norm && !p.bias) {
        core::FillTruncatedNormal(host, 0.02f, {.seed = 11, .offset = offset++});
      } else {
        core::FillConstant(host, p.batch_norm && p.name.ends_with(".weight") ? 1.0f : 0.0f);
      }
    }
    ParametersFromHost(params);
  }

  void ForwardTrainAsync(const models::Batch& batch) override {
    Forward(batch);
    ops::MaskedLmLoss(head_.output(), labels_, weights_, loss_, dlogits_);
  }

  void Backward() override {
    head_.Backward(predictions_, dlogits_, dpredictions_);
    // The gather's adjoint: prediction gradients summed back into their rows.
    ops::EmbeddingBackward(positions_, dpredictions_, dlnf_);
    lnf_.Backward(blocks_.back().h2, dlnf_, dh_);
    for (size_t l = blocks_.size(); l-- > 0;) {
      Block& b = blocks_[l];
      const Tensor& h_in = l > 0 ? blocks_[l - 1].h2 : h0_;
      // h2 = h1 + mlp(ln2(h1)): dh reaches h1 directly and through the MLP.
      b.ffn2.Backward(b.ffn1.output(), dh_, dffn_);
      b.ffn1.Backward(b.ln2.output(), dffn_, dln_);
      b.ln2.Backward(b.h1, dln_, dh1_);
      ops::Accumulate(dh_, dh1_);
      // h1 = h_in + attention(ln1(h_in)).
      b.attention.Backward(b.ln1.output(), dh1_, dln_);
      b.ln1.Backward(h_in, dln_, dh_);
      ops::Accumulate(dh1_, dh_);
    }
    tokens_.Backward(ids_, dh_);
    positions_table_.Backward(position_ids_, dh_);
    NotifyGradientsReady(0);
  }

  // Correct and counted predictions among the weighted (real) ones.
  models::MetricSums EvaluateBatch(const models::Batch& batch) override {
    Forward(batch);
    const float* w = weights_.f32();
    const int32_t* y = static_cast<const int32_t*>(labels_.data());
    models::MetricSums sums;
    for (int64_t i = 0; i < kBatch * kPredictions; ++i) {
      if (w[i] == 0.0f) continue;
      const float* z = head_.output().f32() + i * kVocab;
      sums.numerator += (std::max_element(z, z + kVocab) - z) == y[i];
      sums.denominator += 1;
    }
    return sums;
  }

  models::OwnedBatch SyntheticBatch() const override { return MakeBatch(/*seed=*/99, 0); }

  // kBatch examples from (seed, first ...).
  static models::OwnedBatch MakeBatch(uint64_t seed, uint64_t first) {
    models::OwnedBatch owned;
    int32_t* ids = static_cast<int32_t*>(owned.Add({kRows}, core::DType::kI32).data());
    float* mask = owned.Add({kBatch, kSeq}, core::DType::kF32).f32();
    const int64_t np = kBatch * kPredictions;
    int32_t* positions = static_cast<int32_t*>(owned.Add({np}, core::DType::kI32).data());
    int32_t* labels = static_cast<int32_t*>(owned.Add({np}, core::DType::kI32).data());
    float* weights = owned.Add({np}, core::DType::kF32).f32();
    for (int64_t b = 0; b < kBatch; ++b) {
      const Example e = MakeExample(seed, first + b);
      std::memcpy(ids + b * kSeq, e.ids, sizeof(e.ids));
      std::memcpy(mask + b * kSeq, e.mask, sizeof(e.mask));
      for (int64_t k = 0; k < kPredictions; ++k) {
        positions[b * kPredictions + k] = static_cast<int32_t>(b * kSeq + e.positions[k]);
        labels[b * kPredictions + k] = e.labels[k];
        weights[b * kPredictions + k] = e.weights[k];
      }
    }
    owned.batch.count = kBatch;
    return owned;
  }

 private:
  void Build(const layers::ModelArenas& a) {
    const int64_t np = kBatch * kPredictions;
    blocks_ = std::vector<Block>(kLayers);
    tokens_.Allocate(kRows, kVocab, kHidden, "embeddings.word", a, &registry_);
    positions_table_.Allocate(kRows, kSeq, kHidden, "embeddings.position", a, &registry_);
    for (int64_t l = 0; l < kLayers; ++l) {
      Block& b = blocks_[l];
      const std::string name = "layer." + std::to_string(l);
      b.ln1.Allocate(kRows, kHidden, kLnEpsilon, name + ".ln1", a, &registry_);
      b.attention.Allocate(kBatch, kSeq, kHidden, kHeads, name + ".attention", a, &registry_);
      b.ln2.Allocate(kRows, kHidden, kLnEpsilon, name + ".ln2", a, &registry_);
      b.ffn1.Allocate(kRows, kHidden, kFfn, layers::Activation::kGelu, name + ".ffn1", a,
                      &registry_);
      b.ffn2.Allocate(kRows, kFfn, kHidden, layers::Activation::kNone, name + ".ffn2", a,
                      &registry_);
      b.h1 = a.activations->Allocate({kRows, kHidden});
      b.h2 = a.activations->Allocate({kRows, kHidden});
    }
    lnf_.Allocate(kRows, kHidden, kLnEpsilon, "ln_final", a, &registry_);
    head_.Allocate(np, kHidden, kVocab, layers::Activation::kNone, "head", a, &registry_);
    core::Arena& acts = *a.activations;
    ids_ = acts.Allocate({kRows}, core::DType::kI32);
    position_ids_ = acts.Allocate({kRows}, core::DType::kI32);
    mask_ = acts.Allocate({kBatch, kSeq});
    positions_ = acts.Allocate({np}, core::DType::kI32);
    labels_ = acts.Allocate({np}, core::DType::kI32);
    weights_ = acts.Allocate({np});
    h0_ = acts.Allocate({kRows, kHidden});
    predictions_ = acts.Allocate({np, kHidden});
    dpredictions_ = acts.Allocate({np, kHidden});
    dlogits_ = acts.Allocate({np, kVocab});
    for (Tensor* t : {&dlnf_, &dh_, &dh1_, &dln_}) *t = acts.Allocate({kRows, kHidden});
    dffn_ = acts.Allocate({kRows, kFfn});
    loss_ = acts.Allocate({1});
  }

  void Forward(const models::Batch& batch) {
    for (auto [src, dst] :
         {std::pair{0, &ids_}, {1, &mask_}, {2, &positions_}, {3, &labels_}, {4, &weights_}})
      ops::Copy(batch.inputs[src], *dst);
    tokens_.Forward(ids_);
    positions_table_.Forward(position_ids_);
    ops::Add(tokens_.output(), positions_table_.output(), h0_);
    const Tensor* h = &h0_;
    for (Block& b : blocks_) {
      b.ln1.Forward(*h);
      b.attention.Forward(b.ln1.output(), mask_, {});
      ops::Add(*h, b.attention.output(), b.h1);
      b.ln2.Forward(b.h1);
      b.ffn1.Forward(b.ln2.output());
      b.ffn2.Forward(b.ffn1.output());
      ops::Add(b.h1, b.ffn2.output(), b.h2);
      h = &b.h2;
    }
    lnf_.Forward(*h);
    // The masked positions' rows: a gather, which is an embedding lookup.
    ops::EmbeddingForward(positions_, lnf_.output(), predictions_);
    head_.Forward(predictions_);
  }

  layers::Embedding tokens_, positions_table_;
  std::vector<Block> blocks_;
  layers::LayerNorm lnf_;
  layers::Linear head_;
  Tensor ids_, position_ids_, mask_, positions_, labels_, weights_, h0_, predictions_;
  Tensor dpredictions_, dlogits_, dlnf_, dh_, dh1_, dln_, dffn_;
};

TEST(SmallTransformerTest, RecoversMaskedTokensWithLamb) {
  // Every op here is a few thousand floats: OpenMP threads cannot pay for
  // their fork/join, and on a loaded CI machine spinning threads stall, so
  // the run is single-threaded (the threaded kernels are tested elsewhere).
  omp_set_num_threads(1);
  const auto start = std::chrono::steady_clock::now();
  Encoder model;
  model.Initialize(0);
  const std::vector<TensorSlice> slices = model.slices();
  const int64_t flat = static_cast<int64_t>(model.parameters().size());
  std::vector<float> m(flat, 0.0f), v(flat, 0.0f);
  int32_t lamb_step = 0;

  const int64_t steps = 500;
  const optim::PolynomialWithWarmup schedule(
      {.base_lr = 2e-2, .end_lr = 1e-4, .warmup_steps = 30, .train_steps = steps, .power = 1.0});
  double first_loss = 0.0, last_loss = 0.0;
  for (int64_t step = 0; step < steps; ++step) {
    const models::OwnedBatch batch =
        Encoder::MakeBatch(/*seed=*/1, static_cast<uint64_t>(step * kBatch));
    const float loss = model.ForwardTrain(batch.batch);
    model.Backward();
    if (step == 0) first_loss = loss;
    last_loss = loss;
    ops::LambStep(core::Device::kCpu,
                  {.lr = static_cast<float>(schedule.At(step + 1)), .weight_decay = 0.01f}, slices,
                  model.parameters().data(), model.gradients().data(), m.data(), v.data(),
                  &lamb_step, nullptr);
  }
  // Held-out sequences from another seed.
  models::MetricSums held_out;
  for (int64_t b = 0; b < 16; ++b) {
    const models::MetricSums sums = model.EvaluateBatch(
        Encoder::MakeBatch(/*seed=*/2, static_cast<uint64_t>(b * kBatch)).batch);
    held_out.numerator += sums.numerator;
    held_out.denominator += sums.denominator;
  }
  const double accuracy = held_out.numerator / held_out.denominator;
  const int total = static_cast<int>(held_out.denominator);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "small transformer: loss %.3f -> %.3f, held-out masked-token accuracy %.3f "
      "(%d predictions, chance %.3f), %.1f s\n",
      first_loss, last_loss, accuracy, total, 1.0 / kSymbols, seconds);
  EXPECT_EQ(lamb_step, steps);
  EXPECT_LT(last_loss, first_loss);
  EXPECT_GE(accuracy, kTargetAccuracy);
  EXPECT_LT(seconds, 60.0);
}

}  // namespace
}  // namespace mlperf
