// Label `gpu`: the decoder ops' CUDA twins (cuda/decoder.cu) and the causal
// mask against their CPU twins on the same inputs, forward and backward;
// the blocked attention (kernels/blocked_attention.h) composed of them.
// Skips without a CUDA device.
#include <gtest/gtest.h>

#include <vector>

#include "reference/kernels/blocked_attention.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/ops/decoder.h"
#include "tests/core/cuda_twin_util.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::Tensor;
using testing::Buffer;
using twin::Dev;
using twin::ExpectClose;

class CudaDecoderTwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device; the CPU twins are tested";
  }
};

TEST_F(CudaDecoderTwinTest, RmsNormForwardAndBackward) {
  const int64_t rows = 37, n = 300;  // a row wider than a block
  Buffer x({rows, n}), w({n}), dy({rows, n}), y({rows, n}), inv({rows}), dx({rows, n}), dw({n});
  testing::FillRandom(x, 1, -2.0f, 2.0f);
  testing::FillRandom(w, 2, 0.5f, 1.5f);
  testing::FillRandom(dy, 3);
  Dev gx(x.data, x.shape), gw(w.data, w.shape), gdy(dy.data, dy.shape), gy(y.data, y.shape),
      ginv(inv.data, inv.shape), gdx(dx.data, dx.shape), gdw(dw.data, dw.shape);
  ops::RmsNormForward(1e-5f, x.t(), w.t(), y.t(), inv.t());
  ops::RmsNormForward(1e-5f, gx.t(), gw.t(), gy.t(), ginv.t());
  ExpectClose(gy.Get(), y.data, 1e-5, "rmsnorm y");
  ExpectClose(ginv.Get(), inv.data, 1e-5, "rmsnorm inv_rms");
  ops::RmsNormBackward(x.t(), dy.t(), w.t(), inv.t(), dx.t(), dw.t());
  ops::RmsNormBackward(gx.t(), gdy.t(), gw.t(), ginv.t(), gdx.t(), gdw.t());
  ExpectClose(gdx.Get(), dx.data, 1e-5, "rmsnorm dx");
  ExpectClose(gdw.Get(), dw.data, 1e-4, "rmsnorm dweight");
}

TEST_F(CudaDecoderTwinTest, RotarySwiGluAndRepeatedHeads) {
  const int64_t b = 2, kv = 2, h = 4, t = 9, d = 8;
  Buffer x({b, h, t, d}), y = x, cos({t, d / 2}), sin({t, d / 2});
  testing::FillRandom(x, 4);
  testing::FillRandom(cos, 5);
  testing::FillRandom(sin, 6);
  Dev gx(x.data, x.shape), gy(y.data, y.shape), gcos(cos.data, cos.shape),
      gsin(sin.data, sin.shape);
  for (bool inverse : {false, true}) {
    ops::RotaryEmbedding(inverse, x.t(), cos.t(), sin.t(), y.t());
    ops::RotaryEmbedding(inverse, gx.t(), gcos.t(), gsin.t(), gy.t());
    ExpectClose(gy.Get(), y.data, 1e-6, "rotary");
  }
  Buffer gate({5, 7}), up({5, 7}), dy({5, 7}), out({5, 7}), dgate({5, 7}), dup({5, 7});
  testing::FillRandom(gate, 7, -4.0f, 4.0f);
  testing::FillRandom(up, 8);
  testing::FillRandom(dy, 9);
  Dev ggate(gate.data, gate.shape), gup(up.data, up.shape), gdy(dy.data, dy.shape),
      gout(out.data, out.shape), gdgate(dgate.data, dgate.shape), gdup(dup.data, dup.shape);
  ops::SwiGluForward(gate.t(), up.t(), out.t());
  ops::SwiGluForward(ggate.t(), gup.t(), gout.t());
  ExpectClose(gout.Get(), out.data, 1e-6, "swiglu");
  ops::SwiGluBackward(gate.t(), up.t(), dy.t(), dgate.t(), dup.t());
  ops::SwiGluBackward(ggate.t(), gup.t(), gdy.t(), gdgate.t(), gdup.t());
  ExpectClose(gdgate.Get(), dgate.data, 1e-6, "swiglu dgate");
  ExpectClose(gdup.Get(), dup.data, 1e-6, "swiglu dup");
  Buffer k({b, kv, t, d}), rep({b, h, t, d}), back({b, kv, t, d});
  testing::FillRandom(k, 10);
  Dev gk(k.data, k.shape), grep(rep.data, rep.shape), gback(back.data, back.shape);
  ops::RepeatHeads(k.t(), rep.t());
  ops::RepeatHeads(gk.t(), grep.t());
  ExpectClose(grep.Get(), rep.data, 0.0, "repeat heads");
  ops::SumHeadGroups(rep.t(), back.t());
  ops::SumHeadGroups(grep.t(), gback.t());
  ExpectClose(gback.Get(), back.data, 1e-6, "sum head groups");
}

TEST_F(CudaDecoderTwinTest, TokenCrossEntropy) {
  const int64_t rows = 5, vocab = 1000;
  Buffer z({rows, vocab}), dz({rows, vocab}), loss({1});
  testing::FillRandom(z, 14, -8.0f, 8.0f);
  std::vector<int32_t> labels = {0, 999, 17, 500, 3};
  Dev gz(z.data, z.shape), gdz(dz.data, dz.shape), gloss(loss.data, loss.shape);
  const Dev glabels(labels, {rows});
  ops::TokenCrossEntropy(5.0f, z.t(), Tensor(labels.data(), {rows}, core::DType::kI32), loss.t(),
                         dz.t());
  ops::TokenCrossEntropy(5.0f, gz.t(), glabels.t(), gloss.t(), gdz.t());
  ExpectClose(gloss.Get(), loss.data, 1e-5, "token cross-entropy loss");
  ExpectClose(gdz.Get(), dz.data, 1e-6, "token cross-entropy gradient");
}

TEST_F(CudaDecoderTwinTest, VocabShardsAndShardedCrossEntropy) {
  const int64_t rows = 6, entries = 5, width = 3, vocab = 40;
  std::vector<int32_t> ids = {0, 5, 9, 7, 12, 7};
  const Tensor hid(ids.data(), {rows}, core::DType::kI32);
  const Dev gids(ids, {rows});
  const Tensor gid = gids.t();
  Buffer table({entries, width}), y({rows, width}), dy({rows, width}), dtable({entries, width});
  testing::FillRandom(table, 21);
  testing::FillRandom(dy, 22);
  Dev gtable(table.data, table.shape), gy(y.data, y.shape), gdy(dy.data, dy.shape),
      gdtable(dtable.data, dtable.shape);
  ops::VocabShardEmbedding(5, hid, table.t(), y.t());
  ops::VocabShardEmbedding(5, gid, gtable.t(), gy.t());
  ExpectClose(gy.Get(), y.data, 0.0, "vocab shard embedding");
  ops::VocabShardEmbeddingBackward(5, hid, dy.t(), dtable.t(), false);
  ops::VocabShardEmbeddingBackward(5, gid, gdy.t(), gdtable.t(), false);
  ExpectClose(gdtable.Get(), dtable.data, 1e-6, "vocab shard embedding gradient");
  Buffer z({rows, vocab}), lse({rows}), gathered({2, rows}), loss({1}), dz({rows, vocab});
  testing::FillRandom(z, 23, -6.0f, 6.0f);
  testing::FillRandom(gathered, 24, -3.0f, 3.0f);
  Dev gz(z.data, z.shape), glse(lse.data, lse.shape), ggathered(gathered.data, gathered.shape),
      gloss(loss.data, loss.shape), gdz(dz.data, dz.shape);
  ops::RowLogSumExp(z.t(), lse.t());
  ops::RowLogSumExp(gz.t(), glse.t());
  ExpectClose(glse.Get(), lse.data, 1e-5, "row log-sum-exp");
  ops::CombineLogSumExp(gathered.t(), lse.t());
  ops::CombineLogSumExp(ggathered.t(), glse.t());
  ExpectClose(glse.Get(), lse.data, 1e-6, "combined log-sum-exp");
  ops::ShardedTokenCrossEntropy(2.0f, 5, true, z.t(), hid, lse.t(), loss.t(), dz.t());
  ops::ShardedTokenCrossEntropy(2.0f, 5, true, gz.t(), gid, glse.t(), gloss.t(), gdz.t());
  ExpectClose(gloss.Get(), loss.data, 1e-5, "sharded cross-entropy loss");
  ExpectClose(gdz.Get(), dz.data, 1e-6, "sharded cross-entropy gradient");
}

TEST_F(CudaDecoderTwinTest, CausalAttention) {
  const int64_t b = 2, h = 3, t = 7, d = 4;
  Buffer q({b, h, t, d}), k = q, v = q, out = q, probs({b, h, t, t}), ws({b, h, t, t});
  testing::FillRandom(q, 11);
  testing::FillRandom(k, 12);
  testing::FillRandom(v, 13);
  Dev gq(q.data, q.shape), gk(k.data, k.shape), gv(v.data, v.shape), gout(out.data, out.shape),
      gprobs(probs.data, probs.shape), gws(ws.data, ws.shape);
  const AttentionParams p{.causal = true};
  ops::AttentionForward(p, q.t(), k.t(), v.t(), Tensor(), probs.t(), out.t(), ws.t());
  ops::AttentionForward(p, gq.t(), gk.t(), gv.t(), Tensor(), gprobs.t(), gout.t(), gws.t());
  ExpectClose(gprobs.Get(), probs.data, 1e-5, "causal probabilities");
  ExpectClose(gout.Get(), out.data, 1e-5, "causal output");
}

// Blocks of 3 over 7 queries (the causal mask of a block included), forward
// and backward.
TEST_F(CudaDecoderTwinTest, BlockedAttention) {
  const int64_t b = 2, h = 3, t = 7, d = 4, block = 3;
  Buffer q({b, h, t, d}), k = q, v = q, r = q, out = q, dq = q, dk = q, dv = q;
  Buffer ws({ops::BlockedAttentionWorkspace(b, h, t, block)});
  testing::FillRandom(q, 11);
  testing::FillRandom(k, 12);
  testing::FillRandom(v, 13);
  testing::FillRandom(r, 14);
  Dev gq(q.data, q.shape), gk(k.data, k.shape), gv(v.data, v.shape), gr(r.data, r.shape),
      gout(out.data, out.shape), gdq(dq.data, dq.shape), gdk(dk.data, dk.shape),
      gdv(dv.data, dv.shape), gws(ws.data, ws.shape);
  const AttentionParams p{.causal = true};
  ops::BlockedAttentionForward(p, block, q.t(), k.t(), v.t(), out.t(), ws.t());
  ops::BlockedAttentionForward(p, block, gq.t(), gk.t(), gv.t(), gout.t(), gws.t());
  ops::BlockedAttentionBackward(p, block, q.t(), k.t(), v.t(), r.t(), dq.t(), dk.t(), dv.t(),
                                ws.t());
  ops::BlockedAttentionBackward(p, block, gq.t(), gk.t(), gv.t(), gr.t(), gdq.t(), gdk.t(), gdv.t(),
                                gws.t());
  ExpectClose(gout.Get(), out.data, 1e-5, "blocked output");
  ExpectClose(gdq.Get(), dq.data, 1e-5, "blocked dq");
  ExpectClose(gdk.Get(), dk.data, 1e-5, "blocked dk");
  ExpectClose(gdv.Get(), dv.data, 1e-5, "blocked dv");
}

}  // namespace
}  // namespace mlperf
