// Channels-last (NHWC / NDHWC) convolution, batch norm and pooling: results
// equal the channels-first ops' after transposition, and the channels-last
// backwards match central differences on tiny shapes.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <string>
#include <vector>

#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/pool.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::Layout;
using core::Tensor;
using testing::Buffer;

// A channels-first tensor [N, C, S...] and its channels-last twin
// [N, S..., C], each with its layout tag.
struct Twin {
  Buffer first, last;
  int64_t n, c, s;  // s: spatial positions
  Layout last_layout;

  Twin(int64_t n_, int64_t c_, const std::vector<int64_t>& spatial)
      : first(Shape(n_, c_, spatial, false)),
        last(Shape(n_, c_, spatial, true)),
        n(n_),
        c(c_),
        s(1),
        last_layout(spatial.size() == 3 ? Layout::kNDHWC : Layout::kNHWC) {
    for (int64_t d : spatial) s *= d;
  }

  static core::Shape Shape(int64_t n, int64_t c, const std::vector<int64_t>& sp, bool last) {
    if (sp.size() == 2)
      return last ? core::Shape{n, sp[0], sp[1], c} : core::Shape{n, c, sp[0], sp[1]};
    return last ? core::Shape{n, sp[0], sp[1], sp[2], c} : core::Shape{n, c, sp[0], sp[1], sp[2]};
  }

  Tensor First() { return first.t().Reshaped(first.shape, Layout::kNCHW); }
  Tensor Last() { return last.t().Reshaped(last.shape, last_layout); }

  int64_t LastIndex(int64_t first_index) const {
    const int64_t i = first_index / (c * s), ch = (first_index / s) % c, q = first_index % s;
    return (i * s + q) * c + ch;
  }
  // Fills `first` randomly and copies it into `last`.
  void Fill(uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
    testing::FillRandom(first, seed, lo, hi);
    for (int64_t i = 0; i < first.size(); ++i) last[LastIndex(i)] = first[i];
  }
};

// Every element of the channels-last result equals the channels-first one.
void ExpectSame(const Twin& t, double tol, const std::string& what) {
  int bad = 0;
  for (int64_t i = 0; i < t.first.size(); ++i) {
    const double want = t.first.data[i], got = t.last.data[t.LastIndex(i)];
    if (std::fabs(want - got) > tol * (1.0 + std::fabs(want)) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": channels-first " << want << " channels-last "
                    << got;
  }
  EXPECT_EQ(bad, 0) << what;
}

void ExpectSame(const Buffer& want, const Buffer& got, double tol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size());
  int bad = 0;
  for (int64_t i = 0; i < want.size(); ++i)
    if (std::fabs(want.data[i] - got.data[i]) > tol * (1.0 + std::fabs(want.data[i])) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": " << want.data[i] << " vs " << got.data[i];
  EXPECT_EQ(bad, 0) << what;
}

std::vector<int64_t> InSpatial(const ConvGeometry& g, bool three_d) {
  if (three_d) return {g.in[0], g.in[1], g.in[2]};
  return {g.in[1], g.in[2]};
}
std::vector<int64_t> OutSpatial(const ConvGeometry& g, bool three_d) {
  if (three_d) return {g.out(0), g.out(1), g.out(2)};
  return {g.out(1), g.out(2)};
}

struct ConvCase {
  const char* name;
  ConvGeometry g;
  bool three_d = false;
};

std::vector<ConvCase> SmallCases() {
  ConvGeometry same = Conv2d(2, 3, 7, 6, 4, 3, 3, 2, 0);
  SetSamePadding(&same);  // TF "same": the odd pixel of padding at the end
  ConvGeometry asym3d = Conv3d(1, 2, 4, 5, 3, 3, 3, 2, 1);
  asym3d.pad_end[1] = 0;
  // Stride 1 takes the backward data as a convolution over dy, with the
  // padding mirrored: uneven padding, none, and more than the kernel (which
  // takes the col2im form).
  ConvGeometry same_s1 = Conv2d(2, 3, 5, 6, 4, 2, 2, 1, 0);
  SetSamePadding(&same_s1);
  ConvGeometry asym3d_s1 = Conv3d(1, 2, 4, 5, 3, 3, 3, 1, 1);
  asym3d_s1.pad_end[1] = 0;
  asym3d_s1.pad_begin[2] = 2;
  return {{"3x3_s1_p1", Conv2d(2, 3, 5, 4, 4, 3, 3, 1, 1)},
          {"2x2_s1_same", same_s1},
          {"3x3_s1_p0", Conv2d(2, 3, 6, 5, 4, 3, 3, 1, 0)},
          {"3x3_s1_p3", Conv2d(1, 2, 4, 4, 3, 3, 3, 1, 3)},
          {"3d_asym_s1", asym3d_s1, true},
          {"3x3_s2_p1", Conv2d(2, 5, 7, 6, 3, 3, 3, 2, 1)},
          {"7x7_s2_p3", Conv2d(1, 2, 9, 8, 3, 7, 7, 2, 3)},
          {"same_s2_asym", same},
          {"1x1", Conv2d(2, 4, 3, 3, 5, 1, 1, 1, 0)},
          {"1x1_s2", Conv2d(2, 4, 5, 5, 3, 1, 1, 2, 0)},
          {"3d_asym_s2", asym3d, true}};
}

// Runs forward and both backwards in both layouts and compares them; the
// channels-last workspace has `ws_elements` floats (default: as asked for).
void CompareConvLayouts(const ConvCase& cc, double tol, int64_t ws_elements = -1) {
  const ConvGeometry& g = cc.g;
  Twin x(g.batch, g.in_channels, InSpatial(g, cc.three_d));
  Twin y(g.batch, g.out_channels, OutSpatial(g, cc.three_d));
  Twin dy = y, dx = x;
  Buffer w({g.out_channels, g.in_channels, g.kernel[0], g.kernel[1], g.kernel[2]});
  Buffer dw_first = w, dw_last = w;
  Buffer ws_first({cpu::ConvWorkspaceElements(g) + 1});
  Buffer ws_last({ws_elements >= 0 ? ws_elements : cpu::ConvWorkspaceElements(g, x.last_layout)});
  x.Fill(1);
  dy.Fill(2);
  testing::FillRandom(w, 3);
  cpu::ConvForward(g, x.First(), w.t(), y.First(), ws_first.t());
  cpu::ConvForward(g, x.Last(), w.t(), y.Last(), ws_last.t());
  ExpectSame(y, tol, std::string(cc.name) + " y");
  cpu::ConvBackwardData(g, dy.First(), w.t(), dx.First(), ws_first.t());
  // Garbage in dx must not leak into the result: the NHWC path overwrites it.
  std::fill(dx.last.data.begin(), dx.last.data.end(), 7.0f);
  cpu::ConvBackwardData(g, dy.Last(), w.t(), dx.Last(), ws_last.t());
  ExpectSame(dx, tol, std::string(cc.name) + " dx");
  cpu::ConvBackwardWeight(g, x.First(), dy.First(), dw_first.t(), ws_first.t());
  cpu::ConvBackwardWeight(g, x.Last(), dy.Last(), dw_last.t(), ws_last.t());
  ExpectSame(dw_first, dw_last, tol, std::string(cc.name) + " dw");
}

TEST(ConvNhwcTest, MatchesNchwOnSmallGeometries) {
  for (const ConvCase& cc : SmallCases()) CompareConvLayouts(cc, 1e-5);
}

// ResNet-like shapes big enough that the channels-last im2col is built in
// several chunks per thread (checked through the workspace size).
TEST(ConvNhwcTest, MatchesNchwWhenTheBatchIsSplitIntoChunks) {
  ConvGeometry stem = Conv2d(10, 3, 112, 112, 8, 7, 7, 2, 3);
  ConvGeometry body = Conv2d(6, 32, 56, 56, 16, 3, 3, 1, 1);
  for (const ConvGeometry& g : {stem, body}) {
    const int64_t whole_batch = g.batch * g.col_elements();
    ASSERT_LT(cpu::ConvWorkspaceElements(g, Layout::kNHWC), whole_batch);
    CompareConvLayouts({"blocked", g}, 1e-4);
  }
}

// Fewer volumes than threads: the backward data splits each volume into
// slabs of output depth (3D U-Net trains one or two volumes per step). The
// 3^3 stride 1 and 2 units and the 2^3 stride 2 conv a transposed conv
// inverts, with teams of 2 to 4 threads (uneven slabs, odd teams, two volumes
// in turn); depth 4 leaves too little for two slabs of a 3^3 conv.
TEST(ConvNhwcTest, MatchesNchwWithFewerVolumesThanThreads) {
  const int threads = omp_get_max_threads();
  const std::vector<ConvCase> cases = {{"3^3_s1", Conv3d(1, 3, 13, 5, 4, 4, 3, 1, 1), true},
                                       {"3^3_s2", Conv3d(1, 3, 15, 6, 5, 4, 3, 2, 1), true},
                                       {"2^3_s2", Conv3d(1, 4, 8, 6, 6, 3, 2, 2, 0), true},
                                       {"two_volumes", Conv3d(2, 3, 12, 4, 4, 4, 3, 1, 1), true},
                                       {"shallow", Conv3d(1, 3, 4, 4, 4, 4, 3, 1, 1), true}};
  for (int team : {2, 3, 4}) {
    omp_set_num_threads(team);
    for (const ConvCase& cc : cases) CompareConvLayouts({cc.name, cc.g, true}, 1e-5);
  }
  omp_set_num_threads(threads);
}

// A workspace sized while OpenMP had one thread still works with more
// threads (the call uses one); one smaller than that is refused. Death tests
// re-run the binary ("threadsafe"): a forked child of a process whose OpenMP
// pool is running would hang.
TEST(ConvNhwcDeathTest, UsesOnlyAsManyThreadsAsTheWorkspaceHolds) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const ConvGeometry g = Conv2d(4, 8, 30, 30, 8, 3, 3, 1, 1);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const int64_t one_thread = cpu::ConvWorkspaceElements(g, Layout::kNHWC);
  omp_set_num_threads(std::max(threads, 2));
  EXPECT_GT(cpu::ConvWorkspaceElements(g, Layout::kNHWC), one_thread);
  // dw sums 3,600 products an element in two orders: the blocked cases' 1e-4
  // (1e-5 failed by 5e-5 on a machine whose BLAS takes AVX-512 kernels).
  CompareConvLayouts({"one-thread workspace", g}, 1e-4, one_thread);
  omp_set_num_threads(threads);
  EXPECT_DEATH(CompareConvLayouts({"short workspace", g}, 1e-5, one_thread - 1),
               "workspace smaller");
}

TEST(ConvNhwcTest, BackwardMatchesFiniteDifferences) {
  for (const ConvCase& cc : SmallCases()) {
    const ConvGeometry& g = cc.g;
    Twin x(g.batch, g.in_channels, InSpatial(g, cc.three_d));
    Twin y(g.batch, g.out_channels, OutSpatial(g, cc.three_d));
    Twin r = y, dx = x;
    Buffer w({g.out_channels, g.in_channels, g.kernel[0], g.kernel[1], g.kernel[2]});
    Buffer dw = w;
    Buffer ws({cpu::ConvWorkspaceElements(g, x.last_layout) + 1});
    x.Fill(4);
    r.Fill(5);
    testing::FillRandom(w, 6);
    auto loss = [&] {
      cpu::ConvForward(g, x.Last(), w.t(), y.Last(), ws.t());
      return testing::Dot(y.last, r.last);
    };
    cpu::ConvBackwardData(g, r.Last(), w.t(), dx.Last(), ws.t());
    cpu::ConvBackwardWeight(g, x.Last(), r.Last(), dw.t(), ws.t());
    testing::ExpectGradientMatches(x.last, dx.last.data, loss, 1e-2, 2e-3, cc.name);
    testing::ExpectGradientMatches(w, dw.data, loss, 1e-2, 2e-3, cc.name);
  }
}

TEST(ConvNhwcTest, TransposedConvAndBiasMatchNchw) {
  const ConvGeometry g = Conv2d(2, 3, 6, 4, 5, 2, 2, 2, 0);  // the conv being inverted
  Twin x(g.batch, g.out_channels, OutSpatial(g, false));
  Twin y(g.batch, g.in_channels, InSpatial(g, false));
  Buffer w({g.out_channels, g.in_channels, 2, 2}), bias({g.in_channels});
  Buffer db_first = bias, db_last = bias;
  Buffer ws({cpu::ConvWorkspaceElements(g) + cpu::ConvWorkspaceElements(g, Layout::kNHWC) + 1});
  x.Fill(7);
  testing::FillRandom(w, 8);
  testing::FillRandom(bias, 9);
  ops::ConvTransposeForward(g, x.First(), w.t(), y.First(), ws.t());
  ops::ConvTransposeForward(g, x.Last(), w.t(), y.Last(), ws.t());
  cpu::BiasAddChannels(bias.t(), y.First());
  cpu::BiasAddChannels(bias.t(), y.Last());
  ExpectSame(y, 1e-5, "convT + bias y");
  cpu::BiasBackwardChannels(y.First(), db_first.t());
  cpu::BiasBackwardChannels(y.Last(), db_last.t());
  ExpectSame(db_first, db_last, 1e-5, "bias grad");
}

// Each channel's bias gradient is summed in the same order in either
// layout: the same bits, here with enough channels and elements for the
// channels-last sum to split its channels over the threads.
TEST(ConvNhwcTest, BiasGradientHasTheSameBitsInBothLayouts) {
  Twin dy(2, 96, {6, 8, 8});
  Buffer db_first({96}), db_last({96});
  dy.Fill(10);
  cpu::BiasBackwardChannels(dy.First(), db_first.t());
  cpu::BiasBackwardChannels(dy.Last(), db_last.t());
  EXPECT_EQ(db_first.data, db_last.data);
}

TEST(ConvNhwcDeathTest, RejectsMixedLayouts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const ConvGeometry g = Conv2d(1, 2, 4, 4, 3, 3, 3, 1, 1);
  Twin x(1, 2, {4, 4}), y(1, 3, {4, 4});
  Buffer w({3, 2, 3, 3}), ws({cpu::ConvWorkspaceElements(g, Layout::kNHWC) + 1});
  EXPECT_DEATH(cpu::ConvForward(g, x.Last(), w.t(), y.First(), ws.t()), "channels-last");
  // Channels-last with the channel count in the wrong place.
  const Tensor wrong = x.last.t().Reshaped({1, 2, 4, 4}, Layout::kNHWC);
  EXPECT_DEATH(cpu::ConvForward(g, wrong, w.t(), y.Last(), ws.t()), "check failed");
}

// Batch norm: training forward (outputs, saved and running statistics),
// inference and backward in both layouts; 2-D and 3-D.
TEST(BatchNormNhwcTest, MatchesNchw) {
  for (const std::vector<int64_t>& spatial :
       std::vector<std::vector<int64_t>>{{3, 5}, {2, 3, 2}, {17, 9}}) {
    const int64_t n = 3, c = spatial.size() == 3 ? 5 : 37;  // 37: a partial channel block
    Twin x(n, c, spatial), y(n, c, spatial), dy(n, c, spatial), dx(n, c, spatial);
    x.Fill(10, -2.0f, 3.0f);
    dy.Fill(11);
    Buffer gamma({c}), beta({c}), rm({c}), rv({c}, 1.0f);
    testing::FillRandom(gamma, 12, 0.5f, 1.5f);
    testing::FillRandom(beta, 13);
    testing::FillRandom(rm, 14);
    Buffer rm2 = rm, rv2 = rv, mean1({c}), mean2({c}), istd1({c}), istd2({c});
    Buffer dg1({c}), dg2({c}), db1({c}), db2({c});
    const cpu::BatchNormParams p;
    cpu::BatchNormForwardTraining(p, x.First(), gamma.t(), beta.t(), y.First(), mean1.t(),
                                  istd1.t(), rm.t(), rv.t());
    cpu::BatchNormForwardTraining(p, x.Last(), gamma.t(), beta.t(), y.Last(), mean2.t(), istd2.t(),
                                  rm2.t(), rv2.t());
    ExpectSame(y, 1e-6, "bn y");
    ExpectSame(mean1, mean2, 1e-6, "bn mean");
    ExpectSame(istd1, istd2, 1e-6, "bn inv_std");
    ExpectSame(rm, rm2, 1e-6, "bn running mean");
    ExpectSame(rv, rv2, 1e-6, "bn running var");
    cpu::BatchNormBackward(x.First(), dy.First(), gamma.t(), mean1.t(), istd1.t(), dx.First(),
                           dg1.t(), db1.t());
    cpu::BatchNormBackward(x.Last(), dy.Last(), gamma.t(), mean2.t(), istd2.t(), dx.Last(), dg2.t(),
                           db2.t());
    ExpectSame(dx, 1e-5, "bn dx");
    ExpectSame(dg1, dg2, 1e-5, "bn dgamma");
    ExpectSame(db1, db2, 1e-5, "bn dbeta");
    cpu::BatchNormForwardInference(p, x.First(), gamma.t(), beta.t(), rm.t(), rv.t(), y.First());
    cpu::BatchNormForwardInference(p, x.Last(), gamma.t(), beta.t(), rm.t(), rv.t(), y.Last());
    ExpectSame(y, 1e-6, "bn inference y");
  }
}

TEST(BatchNormNhwcTest, BackwardMatchesFiniteDifferences) {
  const int64_t n = 2, c = 3;
  Twin x(n, c, {3, 2}), y(n, c, {3, 2}), r(n, c, {3, 2}), dx(n, c, {3, 2});
  x.Fill(15, -2.0f, 3.0f);
  r.Fill(16);
  Buffer gamma({c}), beta({c}), rm({c}), rv({c}, 1.0f), mean({c}), istd({c});
  testing::FillRandom(gamma, 17, 0.5f, 1.5f);
  testing::FillRandom(beta, 18);
  Buffer dg = gamma, db = beta;
  const cpu::BatchNormParams p;
  auto loss = [&] {
    cpu::BatchNormForwardTraining(p, x.Last(), gamma.t(), beta.t(), y.Last(), mean.t(), istd.t(),
                                  rm.t(), rv.t());
    return testing::Dot(y.last, r.last);
  };
  loss();
  cpu::BatchNormBackward(x.Last(), r.Last(), gamma.t(), mean.t(), istd.t(), dx.Last(), dg.t(),
                         db.t());
  testing::ExpectGradientMatches(x.last, dx.last.data, loss, 1e-2, 2e-3, "bn dx");
  testing::ExpectGradientMatches(gamma, dg.data, loss, 1e-2, 2e-3, "bn dgamma");
  testing::ExpectGradientMatches(beta, db.data, loss, 1e-2, 2e-3, "bn dbeta");
}

TEST(BatchNormNhwcDeathTest, RejectsMixedLayouts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Twin x(2, 3, {2, 2}), y(2, 3, {2, 2});
  Buffer gamma({3}), beta({3}), rm({3}), rv({3}, 1.0f);
  EXPECT_DEATH(
      cpu::BatchNormForwardInference({}, x.Last(), gamma.t(), beta.t(), rm.t(), rv.t(), y.First()),
      "channels-last");
}

// The ResNet stem pool (3x3/2, TF-same) and a padded 3-D pool; small-integer
// inputs make ties, which both layouts must break towards the first maximum.
TEST(PoolNhwcTest, MaxPoolMatchesNchw) {
  ConvGeometry same = Conv2d(2, 5, 9, 8, 5, 3, 3, 2, 0);
  SetSamePadding(&same);
  const ConvCase cases[] = {{"maxpool_same", same},
                            {"maxpool_p1", Conv2d(3, 18, 7, 7, 18, 3, 3, 2, 1)},
                            {"maxpool_3d", Conv3d(1, 3, 4, 4, 5, 3, 2, 2, 1), true}};
  for (const ConvCase& cc : cases) {
    for (const bool ties : {false, true}) {
      const ConvGeometry& g = cc.g;
      Twin x(g.batch, g.in_channels, InSpatial(g, cc.three_d));
      Twin y(g.batch, g.in_channels, OutSpatial(g, cc.three_d));
      Twin dy = y, dx = x;
      x.Fill(19);
      if (ties) {
        for (float& v : x.first.data) v = std::round(v * 2.0f);
        for (float& v : x.last.data) v = std::round(v * 2.0f);
      }
      dy.Fill(20);
      ops::MaxPoolForward(g, x.First(), y.First());
      ops::MaxPoolForward(g, x.Last(), y.Last());
      ExpectSame(y, 0.0, std::string(cc.name) + " y");
      ops::MaxPoolBackward(g, x.First(), dy.First(), dx.First());
      std::fill(dx.last.data.begin(), dx.last.data.end(), 3.0f);
      ops::MaxPoolBackward(g, x.Last(), dy.Last(), dx.Last());
      ExpectSame(dx, 0.0, std::string(cc.name) + " dx");
    }
  }
}

TEST(PoolNhwcTest, MaxPoolBackwardMatchesFiniteDifferences) {
  ConvGeometry g = Conv2d(2, 3, 5, 5, 3, 3, 3, 2, 0);
  SetSamePadding(&g);
  Twin x(2, 3, {5, 5}), y(2, 3, {g.out(1), g.out(2)}), r = y, dx = x;
  x.Fill(21);
  r.Fill(22);
  auto loss = [&] {
    ops::MaxPoolForward(g, x.Last(), y.Last());
    return testing::Dot(y.last, r.last);
  };
  ops::MaxPoolBackward(g, x.Last(), r.Last(), dx.Last());
  testing::ExpectGradientMatches(x.last, dx.last.data, loss, 1e-3, 2e-3, "maxpool dx");
}

TEST(PoolNhwcTest, GlobalAvgPoolMatchesNchwAndFiniteDifferences) {
  const int64_t n = 3, c = 21;
  Twin x(n, c, {4, 5}), dx(n, c, {4, 5});
  Buffer y1({n, c}), y2({n, c}), dy({n, c});
  x.Fill(23);
  testing::FillRandom(dy, 24);
  ops::GlobalAvgPoolForward(x.First(), y1.t());
  ops::GlobalAvgPoolForward(x.Last(), y2.t());
  ExpectSame(y1, y2, 1e-6, "gap y");
  ops::GlobalAvgPoolBackward(dy.t(), dx.First());
  ops::GlobalAvgPoolBackward(dy.t(), dx.Last());
  ExpectSame(dx, 1e-6, "gap dx");
  auto loss = [&] {
    ops::GlobalAvgPoolForward(x.Last(), y2.t());
    return testing::Dot(y2, dy);
  };
  testing::ExpectGradientMatches(x.last, dx.last.data, loss, 1e-2, 2e-3, "gap dx");
}

TEST(PoolNhwcDeathTest, RejectsMixedLayouts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const ConvGeometry g = Conv2d(1, 2, 4, 4, 2, 2, 2, 2, 0);
  Twin x(1, 2, {4, 4}), y(1, 2, {2, 2});
  EXPECT_DEATH(ops::MaxPoolForward(g, x.Last(), y.First()), "channels-last");
  EXPECT_DEATH(ops::AvgPoolForward(g, true, x.Last(), y.Last()), "NC\\[D\\]HW only");
}

}  // namespace
}  // namespace mlperf
