// End to end: a small pre-LN transformer encoder (token + position
// embeddings, 2 x [LN, multi-head attention with a key padding mask,
// residual, LN, MLP with tanh-GELU, residual], final LN and a masked-token
// head) trained with LAMB on BERT's masked-LM loss reaches the stated
// accuracy on held-out sequences. The data: variable-length sequences of
// token pairs (a, f(a)) with f a fixed bijection, padded to a fixed length;
// some tokens are replaced by [MASK] and must be recovered, which needs
// attention to the partner position (and f or its inverse). Parameters,
// gradients and activations live in arenas; the training loop allocates nothing.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/kernels/cpu/attention.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/embedding.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/cpu/optimizer.h"
#include "reference/optim/schedules.h"

namespace mlperf {
namespace {

using core::Arena;
using core::Tensor;

// Tokens: 0 padding, 1 [MASK], 2..15 symbols.
constexpr int32_t kPad = 0, kMask = 1, kFirstSymbol = 2, kSymbols = 14;
constexpr int64_t kVocab = kFirstSymbol + kSymbols;
constexpr int64_t kBatch = 32, kSeq = 12, kHidden = 32, kHeads = 2, kHeadDim = kHidden / kHeads;
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

struct Layer {
  Tensor ln1_g, ln1_b, w_qkv, b_qkv, w_o, b_o, ln2_g, ln2_b, w_1, b_1, w_2, b_2;
  Tensor* params[12] = {&ln1_g, &ln1_b, &w_qkv, &b_qkv, &w_o, &b_o,
                        &ln2_g, &ln2_b, &w_1,   &b_1,   &w_2, &b_2};
};

// Saved activations of one layer.
struct LayerActs {
  Tensor h_in, ln1, ln1_mean, ln1_istd, qkv, q, k, v, probs, ctx, ctx_rows, h1, ln2, ln2_mean,
      ln2_istd, f1, gelu;
};

struct Net {
  Tensor tok_emb, pos_emb, lnf_g, lnf_b, w_out, b_out;
  Layer layers[kLayers];
  Tensor d_tok_emb, d_pos_emb, d_lnf_g, d_lnf_b, d_w_out, d_b_out;
  Layer grads[kLayers];
  std::vector<Tensor*> param_order, grad_order;
  std::vector<bool> excluded;  // LAMB: no weight decay / trust ratio for LN and biases

  LayerActs acts[kLayers];
  Tensor ids, mask, h_out, lnf, lnf_mean, lnf_istd, pred, logits, labels, weights, loss;
  Tensor dlogits, dpred, dlnf, dh, dh1, dtmp, df2_in, dgelu, df1, dln, dctx_rows, dctx, dq, dk, dv,
      dqkv, attn_ws, attn_out;
  int64_t positions[kBatch * kPredictions];

  void AllocateParams(Arena& params, Arena& grad_arena) {
    auto add = [&](Tensor* p, Tensor* g, core::Shape s, bool excl) {
      *p = params.Allocate(s);
      *g = grad_arena.Allocate(s);
      param_order.push_back(p);
      grad_order.push_back(g);
      excluded.push_back(excl);
    };
    add(&tok_emb, &d_tok_emb, {kVocab, kHidden}, false);
    add(&pos_emb, &d_pos_emb, {kSeq, kHidden}, false);
    for (int64_t l = 0; l < kLayers; ++l) {
      const core::Shape shapes[12] = {{kHidden},     {kHidden},          {3 * kHidden, kHidden},
                                      {3 * kHidden}, {kHidden, kHidden}, {kHidden},
                                      {kHidden},     {kHidden},          {kFfn, kHidden},
                                      {kFfn},        {kHidden, kFfn},    {kHidden}};
      // LN gammas/betas and biases are excluded, weight matrices are not.
      const bool excl[12] = {true, true, false, true, false, true,
                             true, true, false, true, false, true};
      for (int i = 0; i < 12; ++i) add(layers[l].params[i], grads[l].params[i], shapes[i], excl[i]);
    }
    add(&lnf_g, &d_lnf_g, {kHidden}, true);
    add(&lnf_b, &d_lnf_b, {kHidden}, true);
    add(&w_out, &d_w_out, {kVocab, kHidden}, false);
    add(&b_out, &d_b_out, {kVocab}, true);
  }

  void AllocateActs(Arena& a) {
    const int64_t np = kBatch * kPredictions;
    for (LayerActs& s : acts) {
      s.h_in = a.Allocate({kRows, kHidden});
      s.ln1 = a.Allocate({kRows, kHidden});
      s.ln1_mean = a.Allocate({kRows});
      s.ln1_istd = a.Allocate({kRows});
      s.qkv = a.Allocate({kRows, 3 * kHidden});
      s.q = a.Allocate({kBatch, kHeads, kSeq, kHeadDim});
      s.k = a.Allocate({kBatch, kHeads, kSeq, kHeadDim});
      s.v = a.Allocate({kBatch, kHeads, kSeq, kHeadDim});
      s.probs = a.Allocate({kBatch, kHeads, kSeq, kSeq});
      s.ctx = a.Allocate({kBatch, kHeads, kSeq, kHeadDim});
      s.ctx_rows = a.Allocate({kRows, kHidden});
      s.h1 = a.Allocate({kRows, kHidden});
      s.ln2 = a.Allocate({kRows, kHidden});
      s.ln2_mean = a.Allocate({kRows});
      s.ln2_istd = a.Allocate({kRows});
      s.f1 = a.Allocate({kRows, kFfn});
      s.gelu = a.Allocate({kRows, kFfn});
    }
    ids = a.Allocate({kRows}, core::DType::kI32);
    mask = a.Allocate({kBatch, kSeq});
    h_out = a.Allocate({kRows, kHidden});
    lnf = a.Allocate({kRows, kHidden});
    lnf_mean = a.Allocate({kRows});
    lnf_istd = a.Allocate({kRows});
    pred = a.Allocate({np, kHidden});
    logits = a.Allocate({np, kVocab});
    labels = a.Allocate({np}, core::DType::kI32);
    weights = a.Allocate({np});
    loss = a.Allocate({1});
    dlogits = a.Allocate({np, kVocab});
    dpred = a.Allocate({np, kHidden});
    for (Tensor* t : {&dlnf, &dh, &dh1, &dtmp, &dln, &dctx_rows, &attn_out})
      *t = a.Allocate({kRows, kHidden});
    for (Tensor* t : {&df2_in, &dgelu, &df1}) *t = a.Allocate({kRows, kFfn});
    for (Tensor* t : {&dctx, &dq, &dk, &dv}) *t = a.Allocate({kBatch, kHeads, kSeq, kHeadDim});
    dqkv = a.Allocate({kRows, 3 * kHidden});
    attn_ws = a.Allocate({kBatch * kHeads * kSeq * kSeq});
  }

  void Init() {
    // BERT reference: truncated normal(0.02) weights and embeddings, zero
    // biases, LayerNorm gamma 1 and beta 0.
    uint64_t offset = 0;
    for (size_t i = 0; i < param_order.size(); ++i) {
      Tensor& t = *param_order[i];
      if (!excluded[i]) {
        core::FillTruncatedNormal(t, 0.02f, {.seed = 11, .offset = offset++});
      } else {
        core::FillConstant(t, 0.0f);
      }
    }
    for (Layer& l : layers)
      for (Tensor t : {l.ln1_g, l.ln2_g}) core::FillConstant(t, 1.0f);
    core::FillConstant(lnf_g, 1.0f);
  }

  void LoadBatch(uint64_t seed, uint64_t first) {
    for (int64_t b = 0; b < kBatch; ++b) {
      const Example e = MakeExample(seed, first + b);
      std::memcpy(ids.as<int32_t>() + b * kSeq, e.ids, sizeof(e.ids));
      std::memcpy(mask.f32() + b * kSeq, e.mask, sizeof(e.mask));
      for (int64_t k = 0; k < kPredictions; ++k) {
        positions[b * kPredictions + k] = b * kSeq + e.positions[k];
        labels.as<int32_t>()[b * kPredictions + k] = e.labels[k];
        weights.f32()[b * kPredictions + k] = e.weights[k];
      }
    }
  }

  // [rows, 3*hidden] <-> q, k, v [batch, heads, seq, head_dim].
  static void SplitHeads(const Tensor& qkv, const Tensor& q, const Tensor& k, const Tensor& v) {
    const Tensor* out[3] = {&q, &k, &v};
    for (int which = 0; which < 3; ++which)
      for (int64_t b = 0; b < kBatch; ++b)
        for (int64_t h = 0; h < kHeads; ++h)
          for (int64_t t = 0; t < kSeq; ++t)
            std::memcpy(out[which]->f32() + ((b * kHeads + h) * kSeq + t) * kHeadDim,
                        qkv.f32() + (b * kSeq + t) * 3 * kHidden + which * kHidden + h * kHeadDim,
                        sizeof(float) * kHeadDim);
  }
  static void MergeHeads(const Tensor& heads, const Tensor& rows, int64_t row_width,
                         int64_t column) {
    for (int64_t b = 0; b < kBatch; ++b)
      for (int64_t h = 0; h < kHeads; ++h)
        for (int64_t t = 0; t < kSeq; ++t)
          std::memcpy(rows.f32() + (b * kSeq + t) * row_width + column + h * kHeadDim,
                      heads.f32() + ((b * kHeads + h) * kSeq + t) * kHeadDim,
                      sizeof(float) * kHeadDim);
  }

  void Forward() {
    cpu::EmbeddingForward(ids, tok_emb, acts[0].h_in);
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kHidden; ++j)
        acts[0].h_in.f32()[r * kHidden + j] += pos_emb.f32()[(r % kSeq) * kHidden + j];
    for (int64_t l = 0; l < kLayers; ++l) {
      const Layer& w = layers[l];
      LayerActs& s = acts[l];
      cpu::LayerNormForward(kLnEpsilon, s.h_in, w.ln1_g, w.ln1_b, s.ln1, s.ln1_mean, s.ln1_istd);
      cpu::LinearForward(s.ln1, w.w_qkv, w.b_qkv, s.qkv);
      SplitHeads(s.qkv, s.q, s.k, s.v);
      cpu::AttentionForward({}, s.q, s.k, s.v, mask, s.probs, s.ctx, attn_ws);
      MergeHeads(s.ctx, s.ctx_rows, kHidden, 0);
      cpu::LinearForward(s.ctx_rows, w.w_o, w.b_o, attn_out);
      cpu::Add(s.h_in, attn_out, s.h1);
      cpu::LayerNormForward(kLnEpsilon, s.h1, w.ln2_g, w.ln2_b, s.ln2, s.ln2_mean, s.ln2_istd);
      cpu::LinearForward(s.ln2, w.w_1, w.b_1, s.f1);
      cpu::GeluForward(s.f1, s.gelu);
      const Tensor next = l + 1 < kLayers ? acts[l + 1].h_in : h_out;
      cpu::LinearForward(s.gelu, w.w_2, w.b_2, next);
      cpu::Accumulate(s.h1, next);
    }
    cpu::LayerNormForward(kLnEpsilon, h_out, lnf_g, lnf_b, lnf, lnf_mean, lnf_istd);
    for (int64_t i = 0; i < kBatch * kPredictions; ++i)
      std::memcpy(pred.f32() + i * kHidden, lnf.f32() + positions[i] * kHidden,
                  sizeof(float) * kHidden);
    cpu::LinearForward(pred, w_out, b_out, logits);
  }

  void Backward() {
    cpu::MaskedLmLoss(logits, labels, weights, loss, dlogits);
    cpu::LinearBackward(pred, w_out, dlogits, dpred, d_w_out, d_b_out);
    cpu::Fill(dlnf, 0.0f);
    for (int64_t i = 0; i < kBatch * kPredictions; ++i)
      for (int64_t j = 0; j < kHidden; ++j)
        dlnf.f32()[positions[i] * kHidden + j] += dpred.f32()[i * kHidden + j];
    cpu::LayerNormBackward(h_out, dlnf, lnf_g, lnf_mean, lnf_istd, dh, d_lnf_g, d_lnf_b);
    for (int64_t l = kLayers - 1; l >= 0; --l) {
      const Layer& w = layers[l];
      const Layer& g = grads[l];
      LayerActs& s = acts[l];
      // h_out = h1 + mlp(ln2(h1)): dh reaches h1 directly and through the MLP.
      cpu::LinearBackward(s.gelu, w.w_2, dh, dgelu, g.w_2, g.b_2);
      cpu::GeluBackward(s.f1, dgelu, df1);
      cpu::LinearBackward(s.ln2, w.w_1, df1, dln, g.w_1, g.b_1);
      cpu::LayerNormBackward(s.h1, dln, w.ln2_g, s.ln2_mean, s.ln2_istd, dh1, g.ln2_g, g.ln2_b);
      cpu::Accumulate(dh, dh1);
      // h1 = h_in + attention(ln1(h_in)).
      cpu::LinearBackward(s.ctx_rows, w.w_o, dh1, dctx_rows, g.w_o, g.b_o);
      for (int64_t b = 0; b < kBatch; ++b)
        for (int64_t h = 0; h < kHeads; ++h)
          for (int64_t t = 0; t < kSeq; ++t)
            std::memcpy(dctx.f32() + ((b * kHeads + h) * kSeq + t) * kHeadDim,
                        dctx_rows.f32() + (b * kSeq + t) * kHidden + h * kHeadDim,
                        sizeof(float) * kHeadDim);
      cpu::AttentionBackward({}, s.q, s.k, s.v, s.probs, dctx, dq, dk, dv, attn_ws);
      MergeHeads(dq, dqkv, 3 * kHidden, 0);
      MergeHeads(dk, dqkv, 3 * kHidden, kHidden);
      MergeHeads(dv, dqkv, 3 * kHidden, 2 * kHidden);
      cpu::LinearBackward(s.ln1, w.w_qkv, dqkv, dln, g.w_qkv, g.b_qkv);
      cpu::LayerNormBackward(s.h_in, dln, w.ln1_g, s.ln1_mean, s.ln1_istd, dh, g.ln1_g, g.ln1_b);
      cpu::Accumulate(dh1, dh);
    }
    cpu::EmbeddingBackward(ids, dh, d_tok_emb);
    cpu::Fill(d_pos_emb, 0.0f);
    for (int64_t r = 0; r < kRows; ++r)
      for (int64_t j = 0; j < kHidden; ++j)
        d_pos_emb.f32()[(r % kSeq) * kHidden + j] += dh.f32()[r * kHidden + j];
  }

  // Accuracy of the weighted (real) predictions of the current batch.
  void Score(int* correct, int* total) const {
    for (int64_t i = 0; i < kBatch * kPredictions; ++i) {
      if (weights.f32()[i] == 0.0f) continue;
      const float* z = logits.f32() + i * kVocab;
      *correct += (std::max_element(z, z + kVocab) - z) == labels.as<int32_t>()[i];
      ++*total;
    }
  }
};

TEST(SmallTransformerTest, RecoversMaskedTokensWithLamb) {
  // Every op here is a few thousand floats: OpenMP threads cannot pay for
  // their fork/join, and on a loaded CI machine spinning threads stall, so
  // the run is single-threaded (the threaded kernels are tested elsewhere).
  omp_set_num_threads(1);
  const auto start = std::chrono::steady_clock::now();
  Net net;
  Arena measure_p = Arena::Measuring(), measure_g = Arena::Measuring();
  Arena measure_a = Arena::Measuring();
  net.AllocateParams(measure_p, measure_g);
  net.AllocateActs(measure_a);
  net.param_order.clear();
  net.grad_order.clear();
  net.excluded.clear();
  Arena params(core::Device::kCpu, measure_p.used()), grads(core::Device::kCpu, measure_g.used());
  Arena acts(core::Device::kCpu, measure_a.used());
  net.AllocateParams(params, grads);
  net.AllocateActs(acts);
  net.Init();

  // The arenas are dense float arrays with the same layout: one slice per tensor.
  std::vector<TensorSlice> slices;
  const float* base = net.tok_emb.f32();
  for (size_t i = 0; i < net.param_order.size(); ++i)
    slices.push_back({net.param_order[i]->f32() - base, net.param_order[i]->numel(),
                      static_cast<bool>(net.excluded[i])});
  const int64_t flat = static_cast<int64_t>(params.used() / sizeof(float));
  std::vector<float> m(flat, 0.0f), v(flat, 0.0f);
  int32_t lamb_step = 0;

  const int64_t steps = 500;
  const optim::PolyWarmupSchedule schedule{
      .base_lr = 2e-2, .end_lr = 1e-4, .warmup_steps = 30, .train_steps = steps, .power = 1.0};
  double first_loss = 0.0, last_loss = 0.0;
  for (int64_t step = 0; step < steps; ++step) {
    net.LoadBatch(/*seed=*/1, static_cast<uint64_t>(step * kBatch));
    net.Forward();
    net.Backward();
    if (step == 0) first_loss = net.loss.f32()[0];
    last_loss = net.loss.f32()[0];
    cpu::LambStep(
        {.lr = static_cast<float>(optim::LearningRate(schedule, step + 1)), .weight_decay = 0.01f},
        slices, static_cast<float*>(params.base()), static_cast<const float*>(grads.base()),
        m.data(), v.data(), &lamb_step, nullptr);
  }
  // Held-out sequences from another seed.
  int correct = 0, total = 0;
  for (int64_t b = 0; b < 16; ++b) {
    net.LoadBatch(/*seed=*/2, static_cast<uint64_t>(b * kBatch));
    net.Forward();
    net.Score(&correct, &total);
  }
  const double accuracy = static_cast<double>(correct) / total;
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
