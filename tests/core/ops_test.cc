// Pointwise ops, softmax, pooling, linear, embedding and attention: forward
// against definitions, backward against central differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "reference/core/philox.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/philox_x8.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/embedding.h"
#include "reference/kernels/ops/pool.h"
#include "reference/kernels/ops/softmax.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;
using testing::IntBuffer;

// L = <r, f(x)> for a unary op f with backward b(x, y, r) -> dx.
template <typename F, typename B>
void CheckUnary(Buffer& x, F forward, B backward, const char* what, double h = 1e-2,
                core::Shape y_shape = {}) {
  if (y_shape.rank() == 0) y_shape = x.shape;
  Buffer y(y_shape), r(y_shape), dx(x.shape);
  testing::FillRandom(r, 99);
  auto loss = [&] {
    forward(x, y);
    return testing::Dot(y, r);
  };
  loss();
  backward(x, y, r, dx);
  testing::ExpectGradientMatches(x, dx.data, loss, h, 2e-3, what);
}

TEST(ElementwiseTest, ReluAndGeluGradients) {
  Buffer x({4, 5});
  testing::FillRandom(x, 1, -2.0f, 2.0f);
  for (float& v : x.data)
    if (std::fabs(v) < 0.05f) v = 0.3f;  // keep away from the kink
  CheckUnary(
      x, [](Buffer& in, Buffer& out) { ops::ReluForward(in.t(), out.t()); },
      [](Buffer&, Buffer& y, Buffer& dy, Buffer& dx) { ops::ReluBackward(y.t(), dy.t(), dx.t()); },
      "relu");
  CheckUnary(
      x, [](Buffer& in, Buffer& out) { ops::GeluForward(in.t(), out.t()); },
      [](Buffer& in, Buffer&, Buffer& dy, Buffer& dx) {
        ops::GeluBackward(in.t(), dy.t(), dx.t());
      },
      "gelu");
  CheckUnary(
      x, [](Buffer& in, Buffer& out) { ops::TanhForward(in.t(), out.t()); },
      [](Buffer&, Buffer& y, Buffer& dy, Buffer& dx) { ops::TanhBackward(y.t(), dy.t(), dx.t()); },
      "tanh");
}

TEST(ElementwiseTest, GeluIsTheTanhApproximation) {
  Buffer x({3}), y({3});
  x.data = {-1.0f, 0.5f, 2.0f};
  ops::GeluForward(x.t(), y.t());
  for (int i = 0; i < 3; ++i) {
    const double v = x[i];
    const double tanh_form =
        0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(y[i], tanh_form, 1e-6);
    // The erf form differs by more than the tolerance at these points.
    EXPECT_GT(std::fabs(tanh_form - 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))), 1e-5);
  }
}

TEST(ElementwiseTest, DropoutKeepsTheExpectedFractionAndItsGradientReusesTheMask) {
  Buffer x({10000}, 1.0f), y({10000});
  ops::DropoutForward(0.1f, 7, 3, x.t(), y.t());
  int kept = 0;
  for (float v : y.data) {
    if (v != 0.0f) {
      ++kept;
      EXPECT_FLOAT_EQ(v, 1.0f / 0.9f);
    }
  }
  EXPECT_NEAR(kept / 10000.0, 0.9, 0.01);
  Buffer small({20});
  testing::FillRandom(small, 4);
  CheckUnary(
      small, [](Buffer& in, Buffer& out) { ops::DropoutForward(0.3f, 5, 1, in.t(), out.t()); },
      [](Buffer&, Buffer&, Buffer& dy, Buffer& dx) {
        ops::DropoutBackward(0.3f, 5, 1, dy.t(), dx.t());
      },
      "dropout");
}

// The CPU kernel draws a Philox block per 4 elements and compares integers;
// element i must still be kept exactly when PhiloxUniform(seed, offset, i) >= p
// (core/philox.h), which the CUDA kernel follows too. Sizes that are not a
// multiple of 4 or of the kernel's chunk, p on a 2^-24 boundary, and in place.
TEST(ElementwiseTest, DropoutMaskIsEachElementsPhiloxUniform) {
  for (const int64_t n : {1, 7, 1003, 70001}) {
    for (const float p : {0.0f, 0.1f, 0.25f, 0.5f, std::nextafter(0.25f, 1.0f)}) {
      Buffer x({n}), y({n});
      testing::FillRandom(x, 12, 0.5f, 1.5f);
      ops::DropoutForward(p, 41, n, x.t(), y.t());
      int64_t wrong = 0;
      for (int64_t i = 0; i < n; ++i) {
        const bool keep = core::PhiloxUniform(41, n, static_cast<uint64_t>(i)) >= p;
        wrong += y[i] != (keep ? x[i] * (1.0f / (1.0f - p)) : 0.0f);
      }
      EXPECT_EQ(wrong, 0) << "n " << n << " p " << p;
      Buffer in_place = x;
      ops::DropoutBackward(p, 41, n, in_place.t(), in_place.t());
      EXPECT_EQ(in_place.data, y.data) << "n " << n << " p " << p;
    }
  }
}

// A window of a larger tensor drops what the larger tensor's dropout drops
// there: whole, it is DropoutForward; a rank's rows (a data shard) and its
// columns (a tensor-parallel slice, starting inside a Philox block) match
// the whole tensor's, in place too.
TEST(ElementwiseTest, DropoutWindowDropsWhatTheWholeTensorDrops) {
  constexpr int64_t kRows = 9, kCols = 70;
  Buffer x({kRows, kCols}), whole({kRows, kCols}), y({kRows, kCols});
  testing::FillRandom(x, 13, 0.5f, 1.5f);
  ops::DropoutForward(0.1f, 41, 5, x.t(), whole.t());
  ops::DropoutWindow(0.1f, 41, 5, x.t(), y.t(), 0, kCols, 0);
  EXPECT_EQ(y.data, whole.data);
  const auto window = [&](int64_t first_row, int64_t rows, int64_t first_col, int64_t cols) {
    Buffer part({rows, cols}), out({rows, cols});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        part[r * cols + c] = x[(first_row + r) * kCols + first_col + c];
    ops::DropoutWindow(0.1f, 41, 5, part.t(), out.t(), first_row, kCols, first_col);
    ops::DropoutWindow(0.1f, 41, 5, part.t(), part.t(), first_row, kCols, first_col);
    EXPECT_EQ(part.data, out.data) << "in place";
    int64_t wrong = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        wrong += out[r * cols + c] != whole[(first_row + r) * kCols + first_col + c];
    EXPECT_EQ(wrong, 0) << first_row << " " << first_col;
  };
  window(3, 4, 0, kCols);  // rows 3..6
  window(0, kRows, 35, 35);
  window(2, 5, 1, 37);  // a column start inside a block
}

// The eight-block generator gives core::PhiloxBlock's words, also where the
// block index's low word wraps inside the eight, and for 64-bit seeds and
// offsets.
TEST(ElementwiseTest, PhiloxBlocks8AreTheScalarBlocks) {
  const uint64_t seeds[] = {0, 41, 0x123456789abcdef0ull};
  const uint64_t offsets[] = {0, 7, 0xfedcba9876543210ull};
  const uint64_t bases[] = {0, 8, 0xfffffffcull, 0x1fffffff9ull, 0xfffffffffffffff8ull};
  for (uint64_t seed : seeds)
    for (uint64_t offset : offsets)
      for (uint64_t base : bases) {
        uint32_t words[32];
        cpu::PhiloxBlocks8(seed, offset, base, words);
        for (uint64_t b = 0; b < 8; ++b) {
          const core::Philox4x32 want = core::PhiloxBlock(seed, offset, base + b);
          for (int w = 0; w < 4; ++w)
            ASSERT_EQ(words[4 * b + w], want.v[w])
                << "seed " << seed << " offset " << offset << " block " << base + b;
        }
      }
}

// offset_base: the stream offset + *offset_base read when the op runs (a
// step counter that AddInt64 advances) draws the mask of that sum.
TEST(ElementwiseTest, DropoutOffsetBaseAddsToTheOffset) {
  Buffer x({1001}), by_value({1001}), by_base({1001});
  testing::FillRandom(x, 13, 0.5f, 1.5f);
  int64_t base_storage = 0;
  const core::Tensor base(&base_storage, {1}, core::DType::kI64);
  ops::AddInt64(base, 40);
  ops::AddInt64(base, 60);
  ASSERT_EQ(base_storage, 100);
  ops::DropoutForward(0.3f, 7, 100 + 5, x.t(), by_value.t());
  ops::DropoutForward(0.3f, 7, 5, x.t(), by_base.t(), &base_storage);
  EXPECT_EQ(by_base.data, by_value.data);
  Buffer other({1001});
  ops::DropoutForward(0.3f, 7, 5, x.t(), other.t());
  EXPECT_NE(other.data, by_value.data);  // the base did change the mask
  Buffer back = x;
  ops::DropoutBackward(0.3f, 7, 5, back.t(), back.t(), &base_storage);
  EXPECT_EQ(back.data, by_value.data);
}

// Far from 0 one of the two GELU factors saturates; nothing may overflow.
TEST(ElementwiseTest, GeluAtExtremes) {
  Buffer x({6}), y({6}), dy({6}, 1.0f), dx({6});
  x.data = {-1e4f, -60.0f, -9.0f, 9.0f, 60.0f, 1e4f};
  ops::GeluForward(x.t(), y.t());
  ops::GeluBackward(x.t(), dy.t(), dx.t());
  for (int i = 0; i < 6; ++i) {
    const double v = x[i];
    const double exact =
        0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    EXPECT_NEAR(y[i], exact, 1e-6 * std::max(1.0, std::fabs(v))) << v;
    EXPECT_NEAR(dx[i], v > 0 ? 1.0 : 0.0, 1e-6) << v;
  }
}

// Channels-last [n, d, h, w, c]: channels side by side in every voxel.
TEST(ElementwiseTest, ConcatAndSplitChannelsLast) {
  const core::Shape sa{2, 3, 2, 2, 5}, sb{2, 3, 2, 2, 3}, sy{2, 3, 2, 2, 8};
  Buffer a(sa), b(sb), y(sy), back_a(sa), back_b(sb);
  testing::FillRandom(a, 3);
  testing::FillRandom(b, 4);
  const auto ndhwc = [](Buffer& t) { return t.t().Reshaped(t.shape, core::Layout::kNDHWC); };
  ops::ConcatChannels(ndhwc(a), ndhwc(b), ndhwc(y));
  for (int64_t v = 0; v < 2 * 3 * 2 * 2; ++v) {
    for (int64_t j = 0; j < 5; ++j) ASSERT_EQ(y[v * 8 + j], a[v * 5 + j]) << v << " " << j;
    for (int64_t j = 0; j < 3; ++j) ASSERT_EQ(y[v * 8 + 5 + j], b[v * 3 + j]) << v << " " << j;
  }
  ops::SplitChannels(ndhwc(y), ndhwc(back_a), ndhwc(back_b));
  EXPECT_EQ(back_a.data, a.data);
  EXPECT_EQ(back_b.data, b.data);
  // Mixed layout families are refused.
  EXPECT_DEATH(ops::ConcatChannels(a.t(), ndhwc(b), ndhwc(y)), "channels-first or all");
}

TEST(ElementwiseTest, AddConcatSlice) {
  Buffer a({2, 2, 3}), b({2, 1, 3}), y({2, 3, 3}), back_a = a, back_b = b;
  testing::FillRandom(a, 1);
  testing::FillRandom(b, 2);
  ops::ConcatChannels(a.t(), b.t(), y.t());
  EXPECT_EQ(y[0], a[0]);
  EXPECT_EQ(y[6], b[0]);
  EXPECT_EQ(y[9], a[6]);
  ops::SplitChannels(y.t(), back_a.t(), back_b.t());
  EXPECT_EQ(back_a.data, a.data);
  EXPECT_EQ(back_b.data, b.data);
  Buffer slice({2, 1, 3}), dx({2, 3, 3}, 5.0f);
  ops::SliceChannels(y.t(), 2, slice.t());
  EXPECT_EQ(slice.data, b.data);
  ops::SliceChannelsBackward(slice.t(), 2, dx.t());
  EXPECT_EQ(dx[0], 0.0f);
  EXPECT_EQ(dx[6], b[0]);
  Buffer sum(a.shape);
  ops::Add(a.t(), a.t(), sum.t());
  EXPECT_FLOAT_EQ(sum[3], 2 * a[3]);
  cpu::Accumulate(a.t(), sum.t());
  EXPECT_FLOAT_EQ(sum[3], 3 * a[3]);
}

TEST(SoftmaxTest, RowsSumToOneAndGradientMatches) {
  Buffer x({3, 7});
  testing::FillRandom(x, 3, -4.0f, 4.0f);
  Buffer y(x.shape);
  ops::SoftmaxForward(x.t(), y.t());
  for (int r = 0; r < 3; ++r)
    EXPECT_NEAR(std::accumulate(y.data.begin() + r * 7, y.data.begin() + r * 7 + 7, 0.0), 1.0,
                1e-6);
  CheckUnary(
      x, [](Buffer& in, Buffer& out) { ops::SoftmaxForward(in.t(), out.t()); },
      [](Buffer&, Buffer& out, Buffer& dy, Buffer& dx) {
        ops::SoftmaxBackward(out.t(), dy.t(), dx.t());
      },
      "softmax");
}

// Distinct, well separated values so that no max-pool window has a near tie.
void FillDistinct(Buffer& x, uint64_t seed) {
  std::vector<int> order(x.size());
  std::iota(order.begin(), order.end(), 0);
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[core::PhiloxBits(seed, 0, i) % i]);
  for (int64_t i = 0; i < x.size(); ++i) x[i] = 0.1f * order[i];
}

TEST(PoolTest, MaxPoolSamePaddingForwardAndGradient) {
  // ResNet stem: 3x3/2 max pool with TF "same" padding.
  ConvGeometry g = Conv2d(2, 2, 6, 5, 2, 3, 3, 2, 0);
  SetSamePadding(&g);
  Buffer x({2, 2, 6, 5});
  FillDistinct(x, 1);
  Buffer y({2, 2, g.out(1), g.out(2)});
  ops::MaxPoolForward(g, x.t(), y.t());
  // Output (0,0) covers rows 0..2, cols 0..2 (pad_begin is 0 here).
  float expected = -1e9f;
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) expected = std::max(expected, x[r * 5 + c]);
  EXPECT_EQ(y[0], expected);
  CheckUnary(
      x, [&](Buffer& in, Buffer& out) { ops::MaxPoolForward(g, in.t(), out.t()); },
      [&](Buffer& in, Buffer&, Buffer& dy, Buffer& dx) {
        ops::MaxPoolBackward(g, in.t(), dy.t(), dx.t());
      },
      "max pool", 1e-3, y.shape);
}

TEST(PoolTest, AvgPoolBothPaddingConventions) {
  ConvGeometry g = Conv2d(1, 2, 5, 4, 2, 3, 3, 2, 1);
  Buffer x({1, 2, 5, 4});
  testing::FillRandom(x, 2);
  for (bool include_pad : {true, false}) {
    Buffer y({1, 2, g.out(1), g.out(2)});
    ops::AvgPoolForward(g, include_pad, x.t(), y.t());
    // Output (0,0) sees rows 0..1, cols 0..1 of the image plus 5 pads.
    const float corner = x[0] + x[1] + x[4] + x[5];
    EXPECT_NEAR(y[0], corner / (include_pad ? 9.0f : 4.0f), 1e-6);
    CheckUnary(
        x, [&](Buffer& in, Buffer& out) { ops::AvgPoolForward(g, include_pad, in.t(), out.t()); },
        [&](Buffer&, Buffer&, Buffer& dy, Buffer& dx) {
          ops::AvgPoolBackward(g, include_pad, dy.t(), dx.t());
        },
        "avg pool", 1e-2, y.shape);
  }
}

TEST(PoolTest, GlobalAvgPoolGradient) {
  Buffer x({2, 3, 2, 2}), y({2, 3}), r({2, 3}), dx(x.shape);
  testing::FillRandom(x, 3);
  testing::FillRandom(r, 4);
  auto loss = [&] {
    ops::GlobalAvgPoolForward(x.t(), y.t());
    return testing::Dot(y, r);
  };
  loss();
  EXPECT_NEAR(y[0], (x[0] + x[1] + x[2] + x[3]) / 4, 1e-6);
  ops::GlobalAvgPoolBackward(r.t(), dx.t());
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 2e-3, "global avg pool");
}

TEST(LinearTest, GradientsMatch) {
  Buffer x({3, 4}), w({5, 4}), b({5}), y({3, 5}), r({3, 5});
  Buffer dx(x.shape), dw(w.shape), db(b.shape);
  testing::FillRandom(x, 1);
  testing::FillRandom(w, 2);
  testing::FillRandom(b, 3);
  testing::FillRandom(r, 4);
  auto loss = [&] {
    cpu::LinearForward(x.t(), w.t(), b.t(), y.t());
    return testing::Dot(y, r);
  };
  loss();
  double y01 = b[1];
  for (int k = 0; k < 4; ++k) y01 += x[k] * w[4 + k];
  EXPECT_NEAR(y[1], y01, 1e-5);
  cpu::LinearBackward(x.t(), w.t(), r.t(), dx.t(), dw.t(), db.t());
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 2e-3, "linear dx");
  testing::ExpectGradientMatches(w, dw.data, loss, 1e-2, 2e-3, "linear dw");
  testing::ExpectGradientMatches(b, db.data, loss, 1e-2, 2e-3, "linear db");
}

TEST(EmbeddingTest, GatherAndScatterAddWithRepeatedIds) {
  Buffer table({5, 3}), y({4, 3}), r({4, 3}), dtable(table.shape);
  IntBuffer ids({4});
  ids.data = {3, 0, 3, 4};
  testing::FillRandom(table, 1);
  testing::FillRandom(r, 2);
  auto loss = [&] {
    ops::EmbeddingForward(ids.t(), table.t(), y.t());
    return testing::Dot(y, r);
  };
  loss();
  EXPECT_EQ(y[3], table[0]);
  ops::EmbeddingBackward(ids.t(), r.t(), dtable.t());
  testing::ExpectGradientMatches(table, dtable.data, loss, 1e-2, 2e-3, "embedding");
  // Accumulating adds the same sums to what the table's gradient holds.
  Buffer accumulated(table.shape, 0.5f);
  ops::EmbeddingBackward(ids.t(), r.t(), accumulated.t(), /*accumulate=*/true);
  for (size_t i = 0; i < dtable.data.size(); ++i)
    EXPECT_EQ(accumulated.data[i], 0.5f + dtable.data[i]) << i;
}

TEST(AttentionTest, MaskedKeysGetNoWeightAndGradientsMatch) {
  const int64_t b = 2, h = 2, t = 4, d = 3;
  Buffer q({b, h, t, d}), k = q, v = q, out = q, r = q, mask({b, t}, 1.0f);
  Buffer probs({b, h, t, t}), ws({b, h, t, t});
  mask[3] = 0.0f;  // the last key of batch 0 is padding
  testing::FillRandom(q, 1);
  testing::FillRandom(k, 2);
  testing::FillRandom(v, 3);
  testing::FillRandom(r, 4);
  for (float dropout : {0.0f, 0.25f}) {
    AttentionParams p{.dropout = dropout, .seed = 11, .offset = 2};
    auto loss = [&] {
      ops::AttentionForward(p, q.t(), k.t(), v.t(), mask.t(), probs.t(), out.t(), ws.t());
      return testing::Dot(out, r);
    };
    loss();
    for (int64_t row = 0; row < h * t; ++row) EXPECT_LT(probs[row * t + 3], 1e-4);
    EXPECT_GT(probs[(h * t) * t + 3], 1e-3);  // batch 1 attends to its last key
    Buffer dq = q, dk = k, dv = v;
    ops::AttentionBackward(p, q.t(), k.t(), v.t(), probs.t(), r.t(), dq.t(), dk.t(), dv.t(),
                           ws.t());
    testing::ExpectGradientMatches(q, dq.data, loss, 1e-2, 2e-3, "attention dq");
    testing::ExpectGradientMatches(k, dk.data, loss, 1e-2, 2e-3, "attention dk");
    testing::ExpectGradientMatches(v, dv.data, loss, 1e-2, 2e-3, "attention dv");
  }
}

}  // namespace
}  // namespace mlperf
