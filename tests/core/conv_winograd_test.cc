// Winograd F(4x4, 3x3) against the definitions of the three convolution
// passes in double, across partial tiles, several blocks of tiles and images
// one tile high or wide; its results independent of the thread count and of a
// batch split over ranks; and the CPU's channels-first convolution taking it
// exactly where it applies.
#include "reference/kernels/cpu/conv_winograd.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "reference/kernels/cpu/conv.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;

struct Pass {
  std::vector<double> y, dx, dw;
};

// y, dx and dw of a 3x3 stride-1 padding-1 convolution by their definitions.
Pass Direct(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w,
            const std::vector<float>& dy) {
  const int64_t n = g.batch, c = g.in_channels, k = g.out_channels, h = g.in[1], wd = g.in[2];
  Pass p{std::vector<double>(n * k * h * wd), std::vector<double>(n * c * h * wd),
         std::vector<double>(k * c * 9)};
  for (int64_t b = 0; b < n; ++b)
    for (int64_t o = 0; o < k; ++o)
      for (int64_t i = 0; i < c; ++i)
        for (int64_t r = 0; r < h; ++r)
          for (int64_t s = 0; s < wd; ++s)
            for (int a = 0; a < 3; ++a)
              for (int e = 0; e < 3; ++e) {
                const int64_t iy = r - 1 + a, ix = s - 1 + e;
                if (iy < 0 || iy >= h || ix < 0 || ix >= wd) continue;
                const int64_t xi = ((b * c + i) * h + iy) * wd + ix,
                              yi = ((b * k + o) * h + r) * wd + s, wi = (o * c + i) * 9 + a * 3 + e;
                p.y[yi] += double{x[xi]} * w[wi];
                p.dx[xi] += double{dy[yi]} * w[wi];
                p.dw[wi] += double{dy[yi]} * x[xi];
              }
  return p;
}

// Largest |got - want| over the largest |want|.
double RelativeError(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 1e-30;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

struct Passes {
  std::vector<float> y, dx, dw;
};

Passes RunWinograd(const ConvGeometry& g, const std::vector<float>& x, const std::vector<float>& w,
                   const std::vector<float>& dy) {
  std::vector<float> ws(cpu::winograd::WorkspaceElements(g),
                        1e30f);  // stale contents must not leak
  Passes r{std::vector<float>(dy.size(), -7.0f), std::vector<float>(x.size(), -7.0f),
           std::vector<float>(w.size(), -7.0f)};
  cpu::winograd::Forward(g, x.data(), w.data(), r.y.data(), ws.data());
  cpu::winograd::BackwardData(g, dy.data(), w.data(), r.dx.data(), ws.data());
  cpu::winograd::BackwardWeight(g, x.data(), dy.data(), r.dw.data(), ws.data());
  return r;
}

// A 3x3 stride-1 convolution whose caller accepts Winograd.
ConvGeometry Same(int64_t n, int64_t c, int64_t h, int64_t w, int64_t k) {
  ConvGeometry g = Conv2d(n, c, h, w, k, 3, 3, 1, 1);
  g.winograd = true;
  return g;
}

std::vector<float> Random(int64_t n, uint64_t seed) {
  Buffer b(core::Shape{n});
  testing::FillRandom(b, seed);
  return b.data;
}

struct Case {
  const char* name;
  ConvGeometry g;
};

std::vector<Case> Cases() {
  return {{"exact_tiles", Same(1, 16, 8, 8, 16)},
          {"partial_tiles", Same(2, 16, 9, 10, 24)},
          {"one_row", Same(3, 20, 1, 66, 17)},
          {"one_column", Same(2, 16, 65, 1, 16)},
          // 18 x 17 tiles an image: two blocks each.
          {"several_blocks", Same(2, 16, 70, 66, 20)}};
}

TEST(ConvWinogradTest, ThreePassesMatchTheirDefinitions) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(c.name);
    const ConvGeometry& g = c.g;
    ASSERT_TRUE(cpu::winograd::Applies(g));
    const auto x = Random(g.batch * g.in_channels * g.in_spatial(), 1);
    const auto w = Random(g.weight_elements(), 2);
    const auto dy = Random(g.batch * g.out_channels * g.out_spatial(), 3);
    const Pass want = Direct(g, x, w, dy);
    const Passes got = RunWinograd(g, x, w, dy);
    // fp32 Winograd at these widths: a few 1e-7; 1e-5 still tells a wrong
    // transform or a lost tile (errors of order one).
    EXPECT_LT(RelativeError(got.y, want.y), 1e-5);
    EXPECT_LT(RelativeError(got.dx, want.dx), 1e-5);
    EXPECT_LT(RelativeError(got.dw, want.dw), 1e-5);
  }
}

TEST(ConvWinogradTest, ResultsDoNotDependOnTheThreadCount) {
  const ConvGeometry g = Same(2, 16, 70, 66, 20);
  const auto x = Random(g.batch * g.in_channels * g.in_spatial(), 4);
  const auto w = Random(g.weight_elements(), 5);
  const auto dy = Random(g.batch * g.out_channels * g.out_spatial(), 6);
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Passes one = RunWinograd(g, x, w, dy);
  omp_set_num_threads(3);
  const Passes three = RunWinograd(g, x, w, dy);
  omp_set_num_threads(saved);
  EXPECT_EQ(one.y, three.y);
  EXPECT_EQ(one.dx, three.dx);
  EXPECT_EQ(one.dw, three.dw);
}

// Half a batch (another rank's share) gives the same outputs and input
// gradients bit for bit, and weight gradients whose sum over the halves is
// the whole batch's up to rounding (the filter-domain sums are in double:
// in fp32 they would part by some 1e-6, im2col's GEMMs by some 1e-7).
TEST(ConvWinogradTest, BatchSplitOverRanksAgreesWithTheWholeBatch) {
  for (const ConvGeometry& g : {Same(8, 64, 8, 8, 27), Same(4, 32, 24, 24, 48)}) {
    ConvGeometry half = g;
    half.batch = g.batch / 2;
    const auto x = Random(g.batch * g.in_channels * g.in_spatial(), 9);
    const auto w = Random(g.weight_elements(), 10);
    const auto dy = Random(g.batch * g.out_channels * g.out_spatial(), 11);
    const Passes all = RunWinograd(g, x, w, dy);
    auto second = [](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + v.size() / 2, v.end());
    };
    const Passes a = RunWinograd(half, std::vector<float>(x.begin(), x.begin() + x.size() / 2), w,
                                 std::vector<float>(dy.begin(), dy.begin() + dy.size() / 2));
    const Passes b = RunWinograd(half, second(x), w, second(dy));
    EXPECT_EQ(second(all.y), b.y);
    EXPECT_EQ(second(all.dx), b.dx);
    std::vector<double> sum(all.dw.size());
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = double{a.dw[i]} + b.dw[i];
    EXPECT_LT(RelativeError(all.dw, sum), 3e-7);
  }
}

TEST(ConvWinogradTest, AppliesOnlyToTheConvolutionsItComputes) {
  ConvGeometry grouped = Same(1, 32, 8, 8, 32);
  grouped.groups = 2;
  ConvGeometry asymmetric = Same(1, 32, 8, 8, 32);
  asymmetric.pad_end[2] = 0;
  for (ConvGeometry g : {Conv2d(1, 32, 8, 8, 32, 3, 3, 2, 1), Conv2d(1, 32, 8, 8, 32, 3, 3, 1, 0),
                         Conv2d(1, 32, 8, 8, 32, 1, 1, 1, 0), Conv2d(1, 32, 8, 8, 32, 5, 5, 1, 2),
                         Same(1, 8, 8, 8, 32), Same(1, 32, 8, 8, 8), Same(1, 32, 7, 9, 32),
                         Conv3d(1, 32, 4, 4, 4, 32, 3, 1, 1), grouped, asymmetric}) {
    g.winograd = true;
    EXPECT_FALSE(cpu::winograd::Applies(g));
    EXPECT_EQ(cpu::winograd::WorkspaceElements(g), 0);
  }
  // Only where the caller accepts it (ResNet keeps im2col's precision).
  EXPECT_TRUE(cpu::winograd::Applies(Same(1, 32, 8, 8, 32)));
  EXPECT_FALSE(cpu::winograd::Applies(Conv2d(1, 32, 8, 8, 32, 3, 3, 1, 1)));
  cpu::winograd::SetEnabled(false);
  EXPECT_FALSE(cpu::winograd::Applies(Same(1, 32, 8, 8, 32)));
  cpu::winograd::SetEnabled(true);
}

// The channels-first convolution routes qualifying geometries here (the
// same bits) and keeps im2col when switched off or handed a smaller
// workspace (close, not equal).
TEST(ConvWinogradTest, ChannelsFirstConvolutionTakesItWhereItApplies) {
  const ConvGeometry g = Same(2, 16, 9, 10, 24);
  Buffer x({g.batch, g.in_channels, g.in[1], g.in[2]}), w({g.out_channels, g.in_channels, 3, 3}),
      y({g.batch, g.out_channels, g.in[1], g.in[2]});
  testing::FillRandom(x, 7);
  testing::FillRandom(w, 8);
  const int64_t need = cpu::ConvWorkspaceElements(g, core::Layout::kNCHW);
  ASSERT_GE(need, cpu::winograd::WorkspaceElements(g));
  auto conv = [&](int64_t workspace) {
    Buffer ws(core::Shape{workspace});
    cpu::ConvForward(g, x.t(), w.t(), y.t(), ws.t());
    return y.data;
  };
  const Passes direct = RunWinograd(g, x.data, w.data, std::vector<float>(y.data.size()));
  EXPECT_EQ(conv(need), direct.y);
  cpu::winograd::SetEnabled(false);
  const std::vector<float> im2col = conv(need);
  cpu::winograd::SetEnabled(true);
  const std::vector<float> small = conv(cpu::winograd::WorkspaceElements(g) - 1);
  EXPECT_NE(im2col, direct.y);
  EXPECT_EQ(small, im2col);
  const std::vector<double> wide(im2col.begin(), im2col.end());
  EXPECT_LT(RelativeError(direct.y, wide), 1e-5);
}

}  // namespace
}  // namespace mlperf
