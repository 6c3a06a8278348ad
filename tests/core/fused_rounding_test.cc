// The CPU kernels that round their outputs to bf16 or fp16 as they write
// them (convolutions, the fused batch and instance norms, Accumulate) give,
// bit for bit, the unrounded kernel followed by a rounding pass: in both
// layouts, for pointwise convolutions split into several chunks, and for
// the channels-last backward whose threads share an image's depth slabs.
// The fused batch norm's residual add and the backward's addend give the
// same bits as the separate ops they replace.
#include <gtest/gtest.h>
#include <omp.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/dispatch.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::DType;
using core::Layout;
using core::Shape;
using core::Tensor;
using testing::Buffer;

constexpr DType kReduced[] = {DType::kBF16, DType::kF16};

// `fused` equals `plain` rounded to `precision`, bit for bit, and the
// rounding changed something (the outputs are not already representable).
void ExpectRoundedCopy(DType precision, Buffer plain, const Buffer& fused,
                       const std::string& what) {
  const std::vector<float> unrounded = plain.data;
  cpu::RoundToPrecision(precision, plain.t(), plain.t());
  ASSERT_EQ(plain.size(), fused.size()) << what;
  int bad = 0;
  for (int64_t i = 0; i < plain.size(); ++i)
    if (std::memcmp(&plain.data[i], &fused.data[i], sizeof(float)) != 0 && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": " << fused.data[i] << ", rounded apart "
                    << plain.data[i];
  EXPECT_EQ(bad, 0) << what;
  EXPECT_NE(unrounded, plain.data) << what << ": nothing was rounded";
}

struct ConvCase {
  std::string name;
  ConvGeometry g;
  bool channels_last;
};

Shape ActivationShape(const ConvGeometry& g, int64_t channels, const int64_t* spatial, bool last) {
  if (g.kernel[0] > 1 || spatial[0] > 1)
    return last ? Shape{g.batch, spatial[0], spatial[1], spatial[2], channels}
                : Shape{g.batch, channels, spatial[0], spatial[1], spatial[2]};
  return last ? Shape{g.batch, spatial[1], spatial[2], channels}
              : Shape{g.batch, channels, spatial[1], spatial[2]};
}

Layout LayoutOf(const Shape& s, bool last) {
  if (s.rank() == 5) return last ? Layout::kNDHWC : Layout::kNCDHW;
  return last ? Layout::kNHWC : Layout::kNCHW;
}

std::vector<ConvCase> ConvCases() {
  std::vector<ConvCase> cases;
  for (bool last : {false, true}) {
    const std::string tag = last ? " channels-last" : " channels-first";
    cases.push_back({"3x3" + tag, Conv2d(3, 16, 20, 18, 24, 3, 3, 1, 1), last});
    cases.push_back({"3x3/2" + tag, Conv2d(2, 8, 17, 17, 12, 3, 3, 2, 1), last});
    // 1,152 output rows of 600 channels: three chunks of at most 512 rows.
    cases.push_back({"pointwise" + tag, Conv2d(2, 8, 24, 24, 600, 1, 1, 1, 0), last});
  }
  // One image of 8 depths on two threads: the backward's depth slabs.
  cases.push_back({"3x3x3 one image channels-last", Conv3d(1, 4, 8, 6, 6, 8, 3, 1, 1), true});
  return cases;
}

TEST(FusedRoundingTest, ConvolutionsRoundTheirOutputs) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  for (const ConvCase& k : ConvCases()) {
    const ConvGeometry& g = k.g;
    const int64_t out[3] = {g.out(0), g.out(1), g.out(2)};
    const Shape xs = ActivationShape(g, g.in_channels, g.in, k.channels_last);
    const Shape ys = ActivationShape(g, g.out_channels, out, k.channels_last);
    const Layout layout = LayoutOf(xs, k.channels_last);
    Buffer x(xs), w({g.out_channels, g.in_channels, g.kernel[0], g.kernel[1], g.kernel[2]});
    Buffer dy(ys);
    testing::FillRandom(x, 1);
    testing::FillRandom(w, 2);
    testing::FillRandom(dy, 3);
    Buffer workspace({cpu::ConvWorkspaceElements(g, layout)});
    const auto view = [](Buffer& b, Layout l) { return b.t().Reshaped(b.shape, l); };
    for (DType precision : kReduced) {
      const std::string what = k.name + " " + std::string(core::DTypeName(precision));
      Buffer y(ys), y_fused(ys), dx(xs), dx_fused(xs), dw(w.shape), dw_fused(w.shape);
      cpu::ConvForward(g, view(x, layout), w.t(), view(y, layout), workspace.t());
      cpu::ConvForward(g, view(x, layout), w.t(), view(y_fused, layout), workspace.t(), precision);
      ExpectRoundedCopy(precision, y, y_fused, what + " forward");
      cpu::ConvBackwardData(g, view(dy, layout), w.t(), view(dx, layout), workspace.t());
      cpu::ConvBackwardData(g, view(dy, layout), w.t(), view(dx_fused, layout), workspace.t(),
                            precision);
      ExpectRoundedCopy(precision, dx, dx_fused, what + " backward data");
      cpu::ConvBackwardWeight(g, view(x, layout), view(dy, layout), dw.t(), workspace.t());
      cpu::ConvBackwardWeight(g, view(x, layout), view(dy, layout), dw_fused.t(), workspace.t(),
                              precision);
      ExpectRoundedCopy(precision, dw, dw_fused, what + " backward weight");
    }
  }
  omp_set_num_threads(threads);
}

TEST(FusedRoundingTest, BatchNormsRoundTheirOutputs) {
  const int64_t n = 4, c = 40, h = 24, w = 18;
  for (bool last : {false, true}) {
    const Shape shape = last ? Shape{n, h, w, c} : Shape{n, c, h, w};
    const Layout layout = last ? Layout::kNHWC : Layout::kNCHW;
    const auto view = [&](Buffer& b) { return b.t().Reshaped(shape, layout); };
    Buffer x(shape), residual(shape), dy(shape), gamma({c}), beta({c});
    testing::FillRandom(x, 4, 3.0f, 7.0f);
    testing::FillRandom(residual, 5);
    testing::FillRandom(dy, 6);
    testing::FillRandom(gamma, 7, 0.5f, 1.5f);
    testing::FillRandom(beta, 8);
    for (DType precision : kReduced)
      for (bool relu : {false, true}) {
        const std::string what = std::string(last ? "channels-last" : "channels-first") +
                                 (relu ? " relu " : " ") + std::string(core::DTypeName(precision));
        Buffer y(shape), y_fused(shape), mean({c}), inv_std({c}), rm({c}), rv({c}, 1.0f);
        cpu::BatchNormActForwardTraining({}, relu, view(x), view(residual), gamma.t(), beta.t(),
                                         view(y), mean.t(), inv_std.t(), rm.t(), rv.t());
        cpu::BatchNormActForwardTraining({}, relu, view(x), view(residual), gamma.t(), beta.t(),
                                         view(y_fused), mean.t(), inv_std.t(), rm.t(), rv.t(),
                                         precision);
        // With the residual the normalised value is rounded before the add:
        // the plain norm, rounded, then the rounded add, then the ReLU.
        Buffer split(shape), rm2({c}), rv2({c}, 1.0f);
        cpu::BatchNormActForwardTraining({}, false, view(x), Tensor(), gamma.t(), beta.t(),
                                         view(split), mean.t(), inv_std.t(), rm2.t(), rv2.t(),
                                         precision);
        cpu::Accumulate(view(residual), view(split), precision);
        if (relu) ops::ReluForward(view(split), view(split));
        EXPECT_EQ(std::memcmp(split.data.data(), y_fused.data.data(), split.size() * 4), 0)
            << what << " training with a residual";
        cpu::BatchNormActForwardTraining({}, relu, view(x), Tensor(), gamma.t(), beta.t(), view(y),
                                         mean.t(), inv_std.t(), rm.t(), rv.t());
        cpu::BatchNormActForwardTraining({}, relu, view(x), Tensor(), gamma.t(), beta.t(),
                                         view(y_fused), mean.t(), inv_std.t(), rm.t(), rv.t(),
                                         precision);
        ExpectRoundedCopy(precision, y, y_fused, what + " training");
        Buffer yi(shape), yi_fused(shape);
        cpu::BatchNormActForwardInference({}, relu, view(x), Tensor(), gamma.t(), beta.t(), rm.t(),
                                          rv.t(), view(yi));
        cpu::BatchNormActForwardInference({}, relu, view(x), Tensor(), gamma.t(), beta.t(), rm.t(),
                                          rv.t(), view(yi_fused), precision);
        ExpectRoundedCopy(precision, yi, yi_fused, what + " inference");
        // The backward masks dy in place with `relu`: each call its own copy.
        Buffer dy_a = dy, dy_b = dy, dx(shape), dx_fused(shape), dg({c}), db({c});
        cpu::BatchNormActBackward(relu, view(x), view(y), view(dy_a), gamma.t(), mean.t(),
                                  inv_std.t(), view(dx), dg.t(), db.t());
        cpu::BatchNormActBackward(relu, view(x), view(y), view(dy_b), gamma.t(), mean.t(),
                                  inv_std.t(), view(dx_fused), dg.t(), db.t(), precision);
        ExpectRoundedCopy(precision, dx, dx_fused, what + " backward");
        // With an addend: the rounded sum dy + addend, left in dy (masked),
        // and the same dx as the backward of that sum.
        Buffer dy_c = dy, dy_d = dy, dx_c(shape), dx_d(shape), dg2({c}), db2({c});
        cpu::Accumulate(view(residual), view(dy_c), precision);
        cpu::BatchNormActBackward(relu, view(x), view(y), view(dy_c), gamma.t(), mean.t(),
                                  inv_std.t(), view(dx_c), dg.t(), db.t(), precision);
        cpu::BatchNormActBackward(relu, view(x), view(y), view(dy_d), gamma.t(), mean.t(),
                                  inv_std.t(), view(dx_d), dg2.t(), db2.t(), precision,
                                  view(residual));
        EXPECT_EQ(std::memcmp(dy_c.data.data(), dy_d.data.data(), dy_c.size() * 4), 0)
            << what << " dy + addend";
        EXPECT_EQ(std::memcmp(dx_c.data.data(), dx_d.data.data(), dx_c.size() * 4), 0)
            << what << " dx with an addend";
        EXPECT_EQ(dg.data, dg2.data) << what;
        EXPECT_EQ(db.data, db2.data) << what;
      }
  }
}

TEST(FusedRoundingTest, InstanceNormReluRoundsItsOutput) {
  for (bool last : {false, true}) {
    const Shape shape = last ? Shape{2, 6, 7, 5, 37} : Shape{2, 37, 6, 7, 5};
    const Layout layout = last ? Layout::kNDHWC : Layout::kNCDHW;
    const auto view = [&](Buffer& b) { return b.t().Reshaped(shape, layout); };
    Buffer x(shape), gamma({37}), beta({37}), mean({74}), inv_std({74});
    testing::FillRandom(x, 11, -2.0f, 3.0f);
    testing::FillRandom(gamma, 12, 0.5f, 1.5f);
    testing::FillRandom(beta, 13);
    for (DType precision : kReduced) {
      Buffer y(shape), y_fused(shape);
      cpu::InstanceNormForward(1e-5f, view(x), gamma.t(), beta.t(), view(y), mean.t(), inv_std.t(),
                               true);
      cpu::InstanceNormForward(1e-5f, view(x), gamma.t(), beta.t(), view(y_fused), mean.t(),
                               inv_std.t(), true, precision);
      ExpectRoundedCopy(
          precision, y, y_fused,
          std::string(last ? "ndhwc " : "ncdhw ") + std::string(core::DTypeName(precision)));
    }
  }
}

TEST(FusedRoundingTest, AccumulateRoundsTheSum) {
  // Above the size where the loop starts a team; with NaN, infinities and
  // sums beyond fp16's range.
  Buffer x({100000}), y({100000});
  testing::FillRandom(x, 9, -70000.0f, 70000.0f);
  testing::FillRandom(y, 10);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[6] = std::numeric_limits<float>::infinity();
  y[7] = -std::numeric_limits<float>::infinity();
  for (DType precision : kReduced) {
    Buffer sum = y, fused = y;
    cpu::Accumulate(x.t(), sum.t());
    cpu::Accumulate(x.t(), fused.t(), precision);
    ExpectRoundedCopy(precision, sum, fused, std::string(core::DTypeName(precision)));
  }
}

}  // namespace
}  // namespace mlperf
