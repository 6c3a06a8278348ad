// The decoder LLMs' ops (kernels/ops/decoder.h) and the causal attention:
// forwards against their definitions, backwards against central
// differences, the rotation's inverse as its adjoint, repeated heads summed
// back; the blocked (memory-efficient) attention against the kept-
// probabilities form, the causal mask of a block, and central differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "reference/kernels/blocked_attention.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/ops/attention.h"
#include "reference/kernels/ops/decoder.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;

TEST(DecoderOpsTest, RmsNormIsItsDefinitionAndGradientsMatch) {
  const int64_t rows = 3, n = 8;
  Buffer x({rows, n}), w({n}), y({rows, n}), inv({rows}), r({rows, n});
  testing::FillRandom(x, 1, -2.0f, 2.0f);
  testing::FillRandom(w, 2, 0.5f, 1.5f);
  testing::FillRandom(r, 3);
  const float eps = 1e-5f;
  auto loss = [&] {
    ops::RmsNormForward(eps, x.t(), w.t(), y.t(), inv.t());
    return testing::Dot(y, r);
  };
  loss();
  for (int64_t row = 0; row < rows; ++row) {
    double squares = 0.0;
    for (int64_t f = 0; f < n; ++f) squares += double{x[row * n + f]} * x[row * n + f];
    const double expected_inv = 1.0 / std::sqrt(squares / n + eps);
    EXPECT_NEAR(inv[row], expected_inv, 1e-6 * expected_inv);
    for (int64_t f = 0; f < n; ++f)
      EXPECT_NEAR(y[row * n + f], x[row * n + f] * expected_inv * w[f], 1e-5);
  }
  Buffer dx({rows, n}), dw({n});
  ops::RmsNormBackward(x.t(), r.t(), w.t(), inv.t(), dx.t(), dw.t());
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 2e-3, "rmsnorm dx");
  testing::ExpectGradientMatches(w, dw.data, loss, 1e-2, 2e-3, "rmsnorm dweight");
}

TEST(DecoderOpsTest, RotaryEmbeddingRotatesHalvesAndItsInverseIsTheGradient) {
  const int64_t b = 2, h = 2, t = 3, d = 6, half = d / 2;
  Buffer x({b, h, t, d}), y = x, r = x, cos({t, half}), sin({t, half});
  testing::FillRandom(x, 4);
  testing::FillRandom(r, 5);
  for (int64_t p = 0; p < t; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = p * std::pow(100.0, -2.0 * i / d);
      cos[p * half + i] = static_cast<float>(std::cos(angle));
      sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
  auto loss = [&] {
    ops::RotaryEmbedding(false, x.t(), cos.t(), sin.t(), y.t());
    return testing::Dot(y, r);
  };
  loss();
  // Position 1 of head (1, 1): the definition.
  const int64_t at = ((1 * h + 1) * t + 1) * d;
  for (int64_t i = 0; i < half; ++i) {
    const float c = cos[half + i], s = sin[half + i];
    EXPECT_NEAR(y[at + i], x[at + i] * c - x[at + i + half] * s, 1e-6);
    EXPECT_NEAR(y[at + i + half], x[at + i + half] * c + x[at + i] * s, 1e-6);
  }
  // Position 0 is the identity.
  for (int64_t i = 0; i < d; ++i) EXPECT_EQ(y[i], x[i]);
  Buffer dx = x;
  ops::RotaryEmbedding(true, r.t(), cos.t(), sin.t(), dx.t());
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 2e-3, "rope dx");
  // In place, and back: the inverse undoes the rotation.
  Buffer z = x;
  ops::RotaryEmbedding(false, z.t(), cos.t(), sin.t(), z.t());
  ops::RotaryEmbedding(true, z.t(), cos.t(), sin.t(), z.t());
  for (int64_t i = 0; i < z.size(); ++i) EXPECT_NEAR(z[i], x[i], 1e-6);
}

TEST(DecoderOpsTest, SwiGluIsSiluTimesUpAndGradientsMatch) {
  Buffer gate({4, 5}), up({4, 5}), y({4, 5}), r({4, 5});
  testing::FillRandom(gate, 6, -3.0f, 3.0f);
  testing::FillRandom(up, 7);
  testing::FillRandom(r, 8);
  auto loss = [&] {
    ops::SwiGluForward(gate.t(), up.t(), y.t());
    return testing::Dot(y, r);
  };
  loss();
  for (int64_t i = 0; i < y.size(); ++i)
    EXPECT_NEAR(y[i], gate[i] / (1.0 + std::exp(-gate[i])) * up[i], 1e-6);
  Buffer dgate({4, 5}), dup({4, 5});
  ops::SwiGluBackward(gate.t(), up.t(), r.t(), dgate.t(), dup.t());
  testing::ExpectGradientMatches(gate, dgate.data, loss, 1e-2, 2e-3, "swiglu dgate");
  testing::ExpectGradientMatches(up, dup.data, loss, 1e-2, 2e-3, "swiglu dup");
}

TEST(DecoderOpsTest, RepeatedHeadsReadTheirGroupsKvHeadAndSumBack) {
  const int64_t b = 2, kv = 2, h = 6, t = 3, d = 2;
  Buffer x({b, kv, t, d}), y({b, h, t, d}), r({b, h, t, d});
  testing::FillRandom(x, 9);
  testing::FillRandom(r, 10);
  auto loss = [&] {
    ops::RepeatHeads(x.t(), y.t());
    return testing::Dot(y, r);
  };
  loss();
  for (int64_t i = 0; i < b; ++i)
    for (int64_t head = 0; head < h; ++head)
      for (int64_t j = 0; j < t * d; ++j)
        EXPECT_EQ(y[(i * h + head) * t * d + j], x[(i * kv + head / 3) * t * d + j]);
  Buffer dx({b, kv, t, d});
  ops::SumHeadGroups(r.t(), dx.t());
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 1e-3, "repeat heads");
}

TEST(DecoderOpsTest, TokenCrossEntropyIsTheMeanNllAndItsGradient) {
  const int64_t rows = 6, vocab = 37;
  Buffer z({rows, vocab}), dz({rows, vocab}), loss({1});
  testing::FillRandom(z, 15, -30.0f, 30.0f);  // exponentials far apart
  testing::IntBuffer labels({rows});
  for (int64_t r = 0; r < rows; ++r) labels.data[r] = static_cast<int32_t>((r * 11) % vocab);
  ops::TokenCrossEntropy(4.0f, z.t(), labels.t(), loss.t(), dz.t());
  double expected = 0.0;
  for (int64_t r = 0; r < rows; ++r) {
    double max = z[r * vocab], sum = 0.0;
    for (int64_t j = 0; j < vocab; ++j) max = std::max<double>(max, z[r * vocab + j]);
    for (int64_t j = 0; j < vocab; ++j) sum += std::exp(z[r * vocab + j] - max);
    expected += max + std::log(sum) - z[r * vocab + labels.data[r]];
  }
  EXPECT_NEAR(loss[0], expected / 4.0, 1e-5 * expected);
  Buffer scratch({rows, vocab}), value({1});
  auto f = [&] {
    ops::TokenCrossEntropy(4.0f, z.t(), labels.t(), value.t(), scratch.t());
    return double{value[0]};
  };
  testing::ExpectGradientMatches(z, dz.data, f, 1e-2, 2e-3, "token cross-entropy");
}

// Masked labels (a prompt's, -100): their rows add nothing and get a zero
// gradient; the rest is the loss of the counted rows alone.
TEST(DecoderOpsTest, IgnoredLabelsAddNothing) {
  const int64_t rows = 6, vocab = 37;
  Buffer z({rows, vocab}), dz({rows, vocab}), loss({1});
  testing::FillRandom(z, 15, -3.0f, 3.0f);
  testing::IntBuffer labels({rows});
  labels.data = {ops::kIgnoreLabel, 3, ops::kIgnoreLabel, 30, 7, ops::kIgnoreLabel};
  testing::FillRandom(dz, 16);  // garbage the op must overwrite
  ops::TokenCrossEntropy(3.0f, z.t(), labels.t(), loss.t(), dz.t());
  // The three counted rows alone.
  Buffer kept({3, vocab}), dkept({3, vocab}), kept_loss({1});
  testing::IntBuffer kept_labels({3});
  kept_labels.data = {3, 30, 7};
  const int64_t counted[3] = {1, 3, 4}, kept_row[rows] = {-1, 0, -1, 1, 2, -1};
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < vocab; ++j) kept[i * vocab + j] = z[counted[i] * vocab + j];
  ops::TokenCrossEntropy(3.0f, kept.t(), kept_labels.t(), kept_loss.t(), dkept.t());
  EXPECT_FLOAT_EQ(loss[0], kept_loss[0]);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < vocab; ++j)
      EXPECT_EQ(dz[r * vocab + j], kept_row[r] < 0 ? 0.0f : dkept[kept_row[r] * vocab + j])
          << r << " " << j;
}

TEST(DecoderOpsTest, VocabShardEmbeddingLooksUpItsRowsAndZeroesOthers) {
  const int64_t entries = 5, width = 4, first = 5;  // rows 5..9 of the vocabulary
  Buffer table({entries, width}), y({6, width}), r({6, width}), dtable({entries, width});
  testing::FillRandom(table, 16);
  testing::FillRandom(r, 17);
  testing::IntBuffer ids({6});
  ids.data = {0, 5, 9, 7, 12, 7};  // two outside, a repeated id
  auto loss = [&] {
    ops::VocabShardEmbedding(first, ids.t(), table.t(), y.t());
    return testing::Dot(y, r);
  };
  loss();
  for (int64_t f = 0; f < width; ++f) {
    EXPECT_EQ(y[0 * width + f], 0.0f);
    EXPECT_EQ(y[4 * width + f], 0.0f);
    EXPECT_EQ(y[1 * width + f], table[0 * width + f]);
    EXPECT_EQ(y[3 * width + f], table[2 * width + f]);
  }
  ops::VocabShardEmbeddingBackward(first, ids.t(), r.t(), dtable.t(), false);
  testing::ExpectGradientMatches(table, dtable.data, loss, 1e-2, 1e-3, "vocab shard embedding");
}

// Logits split into two column shards: their log-sum-exps combined and the
// sharded cross-entropy on each give the whole row's loss and gradient (a
// masked row's nothing).
TEST(DecoderOpsTest, ShardedCrossEntropyEqualsTheWholeRows) {
  const int64_t rows = 4, vocab = 10, half = 5;
  Buffer z({rows, vocab}), dz({rows, vocab}), loss({1});
  testing::FillRandom(z, 18, -5.0f, 5.0f);
  testing::IntBuffer labels({rows});
  labels.data = {0, 4, ops::kIgnoreLabel, 9};  // a masked row too
  ops::TokenCrossEntropy(3.0f, z.t(), labels.t(), loss.t(), dz.t());
  Buffer shard[2] = {Buffer({rows, half}), Buffer({rows, half})};
  Buffer lse[2] = {Buffer({rows}), Buffer({rows})};
  for (int k = 0; k < 2; ++k) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < half; ++j) shard[k][r * half + j] = z[r * vocab + k * half + j];
    ops::RowLogSumExp(shard[k].t(), lse[k].t());
  }
  Buffer gathered({2, rows}), combined({rows});
  for (int64_t r = 0; r < rows; ++r) {
    gathered[r] = lse[0][r];
    gathered[rows + r] = lse[1][r];
  }
  ops::CombineLogSumExp(gathered.t(), combined.t());
  double total = 0.0;
  for (int k = 0; k < 2; ++k) {
    Buffer part({1}), dpart({rows, half});
    ops::ShardedTokenCrossEntropy(3.0f, k * half, k == 0, shard[k].t(), labels.t(), combined.t(),
                                  part.t(), dpart.t());
    total += part[0];
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < half; ++j)
        EXPECT_NEAR(dpart[r * half + j], dz[r * vocab + k * half + j], 1e-6);
  }
  EXPECT_NEAR(total, loss[0], 1e-5);
}

TEST(DecoderOpsTest, CausalAttentionSeesNoLaterKeyAndGradientsMatch) {
  const int64_t b = 2, h = 2, t = 5, d = 3;
  Buffer q({b, h, t, d}), k = q, v = q, out = q, r = q;
  Buffer probs({b, h, t, t}), ws({b, h, t, t});
  testing::FillRandom(q, 11);
  testing::FillRandom(k, 12);
  testing::FillRandom(v, 13);
  testing::FillRandom(r, 14);
  const AttentionParams p{.causal = true};
  auto loss = [&] {
    ops::AttentionForward(p, q.t(), k.t(), v.t(), core::Tensor(), probs.t(), out.t(), ws.t());
    return testing::Dot(out, r);
  };
  loss();
  for (int64_t m = 0; m < b * h; ++m)
    for (int64_t query = 0; query < t; ++query)
      for (int64_t key = 0; key < t; ++key) {
        const float prob = probs[(m * t + query) * t + key];
        if (key > query) {
          EXPECT_EQ(prob, 0.0f);
        } else {
          EXPECT_GT(prob, 0.0f);
        }
      }
  // The first query attends to itself alone: its output is its value.
  for (int64_t j = 0; j < d; ++j) EXPECT_NEAR(out[j], v[j], 1e-6);
  Buffer dq = q, dk = k, dv = v;
  ops::AttentionBackward(p, q.t(), k.t(), v.t(), probs.t(), r.t(), dq.t(), dk.t(), dv.t(), ws.t());
  testing::ExpectGradientMatches(q, dq.data, loss, 1e-2, 2e-3, "causal dq");
  testing::ExpectGradientMatches(k, dk.data, loss, 1e-2, 2e-3, "causal dk");
  testing::ExpectGradientMatches(v, dv.data, loss, 1e-2, 2e-3, "causal dv");
}

TEST(DecoderOpsTest, CausalMaskOfABlockHidesKeysAfterItsQueries) {
  // The last 2 queries of 5 keys: query 3 sees keys 0..3, query 4 all.
  Buffer scores({1, 1, 2, 5});
  testing::FillRandom(scores, 21);
  ops::CausalMask(scores.t());
  for (int64_t key = 0; key < 5; ++key) {
    EXPECT_EQ(std::isinf(scores[key]), key == 4) << key;
    EXPECT_FALSE(std::isinf(scores[5 + key])) << key;
  }
}

// Blocks that divide the sequence, that do not, of one query, and of the
// whole sequence, causal and not: the outputs and gradients of the
// kept-probabilities form, and the blocked gradients against differences.
TEST(DecoderOpsTest, BlockedAttentionEqualsTheKeptProbabilitiesForm) {
  const int64_t b = 2, h = 3, t = 7, d = 4;
  Buffer q({b, h, t, d}), k = q, v = q, r = q;
  testing::FillRandom(q, 31);
  testing::FillRandom(k, 32);
  testing::FillRandom(v, 33);
  testing::FillRandom(r, 34);
  for (const bool causal : {true, false}) {
    const AttentionParams p{.causal = causal};
    Buffer probs({b, h, t, t}), ws({b, h, t, t}), want = q, dq = q, dk = q, dv = q;
    ops::AttentionForward(p, q.t(), k.t(), v.t(), core::Tensor(), probs.t(), want.t(), ws.t());
    ops::AttentionBackward(p, q.t(), k.t(), v.t(), probs.t(), r.t(), dq.t(), dk.t(), dv.t(),
                           ws.t());
    for (const int64_t block : {int64_t{1}, int64_t{3}, int64_t{7}, int64_t{16}}) {
      SCOPED_TRACE(::testing::Message() << "causal " << causal << ", block " << block);
      Buffer out = q, bq = q, bk = q, bv = q;
      Buffer scratch({ops::BlockedAttentionWorkspace(b, h, t, block)});
      // Garbage in the gradients: the backward must not add to it.
      testing::FillRandom(bk, 35);
      testing::FillRandom(bv, 36);
      ops::BlockedAttentionForward(p, block, q.t(), k.t(), v.t(), out.t(), scratch.t());
      ops::BlockedAttentionBackward(p, block, q.t(), k.t(), v.t(), r.t(), bq.t(), bk.t(), bv.t(),
                                    scratch.t());
      for (int64_t i = 0; i < q.t().numel(); ++i) {
        EXPECT_NEAR(out[i], want[i], 1e-6) << i;
        EXPECT_NEAR(bq[i], dq[i], 1e-6) << i;
        EXPECT_NEAR(bk[i], dk[i], 1e-6) << i;
        EXPECT_NEAR(bv[i], dv[i], 1e-6) << i;
      }
      if (block != 3) continue;
      auto loss = [&] {
        ops::BlockedAttentionForward(p, block, q.t(), k.t(), v.t(), out.t(), scratch.t());
        return testing::Dot(out, r);
      };
      testing::ExpectGradientMatches(q, bq.data, loss, 1e-2, 2e-3, "blocked dq");
      testing::ExpectGradientMatches(k, bk.data, loss, 1e-2, 2e-3, "blocked dk");
      testing::ExpectGradientMatches(v, bv.data, loss, 1e-2, 2e-3, "blocked dv");
    }
  }
}

}  // namespace
}  // namespace mlperf
