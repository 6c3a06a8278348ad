// Convolution forward against a direct loop, backward against central
// differences, and transposed convolution as the adjoint of convolution.
#include "reference/kernels/cpu/conv.h"

#include <gtest/gtest.h>

#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;

// The definition of a cross-correlation, written without im2col.
std::vector<float> DirectConv(const ConvGeometry& g, const Buffer& x, const Buffer& w) {
  std::vector<float> y(g.batch * g.out_channels * g.out_spatial(), 0.0f);
  for (int64_t n = 0; n < g.batch; ++n)
    for (int64_t k = 0; k < g.out_channels; ++k)
      for (int64_t z = 0; z < g.out(0); ++z)
        for (int64_t r = 0; r < g.out(1); ++r)
          for (int64_t s = 0; s < g.out(2); ++s) {
            double acc = 0.0;
            const int64_t cg = g.group_in_channels();
            const int64_t c0 = k / g.group_out_channels() * cg;  // the filter's input group
            for (int64_t c = c0; c < c0 + cg; ++c)
              for (int64_t a = 0; a < g.kernel[0]; ++a)
                for (int64_t b = 0; b < g.kernel[1]; ++b)
                  for (int64_t e = 0; e < g.kernel[2]; ++e) {
                    const int64_t iz = z * g.stride[0] - g.pad_begin[0] + a;
                    const int64_t iy = r * g.stride[1] - g.pad_begin[1] + b;
                    const int64_t ix = s * g.stride[2] - g.pad_begin[2] + e;
                    if (iz < 0 || iz >= g.in[0] || iy < 0 || iy >= g.in[1] || ix < 0 ||
                        ix >= g.in[2])
                      continue;
                    acc += x.data[((n * g.in_channels + c) * g.in[0] + iz) * g.in[1] * g.in[2] +
                                  iy * g.in[2] + ix] *
                           w.data[(((k * cg + c - c0) * g.kernel[0] + a) * g.kernel[1] + b) *
                                      g.kernel[2] +
                                  e];
                  }
            y[((n * g.out_channels + k) * g.out(0) + z) * g.out(1) * g.out(2) + r * g.out(2) + s] =
                static_cast<float>(acc);
          }
  return y;
}

struct ConvCase {
  const char* name;
  ConvGeometry g;
};

std::vector<ConvCase> Cases() {
  ConvGeometry same = Conv2d(2, 3, 7, 6, 4, 3, 3, 2, 0);
  SetSamePadding(&same);  // TF "same": the extra pixel goes at the end
  ConvGeometry asym3d = Conv3d(1, 2, 4, 5, 3, 3, 3, 2, 1);
  asym3d.pad_end[1] = 0;
  // ResNeXt's grouped 3x3 (stride 1 and 2) and a grouped pointwise one.
  ConvGeometry grouped = Conv2d(2, 8, 5, 4, 12, 3, 3, 1, 1),
               grouped_s2 = Conv2d(2, 6, 7, 6, 6, 3, 3, 2, 1),
               grouped_1x1 = Conv2d(2, 4, 3, 3, 6, 1, 1, 1, 0);
  grouped.groups = 4;
  grouped_s2.groups = 3;
  grouped_1x1.groups = 2;
  return {{"grouped_3x3_s1_p1", grouped},
          {"grouped_3x3_s2_p1", grouped_s2},
          {"grouped_1x1", grouped_1x1},
          {"conv2d_3x3_s1_p1", Conv2d(2, 3, 5, 4, 4, 3, 3, 1, 1)},
          {"conv2d_7x7_s2_p3", Conv2d(1, 2, 9, 8, 3, 7, 7, 2, 3)},
          {"conv2d_same_s2", same},
          {"conv2d_1x1", Conv2d(2, 4, 3, 3, 5, 1, 1, 1, 0)},
          {"conv2d_1x1_s2", Conv2d(2, 4, 5, 5, 3, 1, 1, 2, 0)},
          {"conv3d_3_s1_p1", Conv3d(2, 2, 3, 4, 3, 3, 3, 1, 1)},
          {"conv3d_asym_pad_s2", asym3d}};
}

TEST(ConvTest, SamePaddingPutsTheExtraPixelAtTheEnd) {
  ConvGeometry g = Conv2d(1, 1, 112, 112, 1, 3, 3, 2, 0);
  SetSamePadding(&g);
  EXPECT_EQ(g.pad_begin[1], 0);
  EXPECT_EQ(g.pad_end[1], 1);
  EXPECT_EQ(g.out(1), 56);
}

TEST(ConvTest, ForwardMatchesDirectLoop) {
  for (const ConvCase& c : Cases()) {
    const ConvGeometry& g = c.g;
    Buffer x({g.batch, g.in_channels, g.in[0], g.in[1], g.in[2]});
    Buffer w({g.out_channels, g.group_in_channels(), g.kernel[0], g.kernel[1], g.kernel[2]});
    Buffer y({g.batch, g.out_channels, g.out(0), g.out(1), g.out(2)});
    Buffer ws({cpu::ConvWorkspaceElements(g) + 1});
    testing::FillRandom(x, 1);
    testing::FillRandom(w, 2);
    cpu::ConvForward(g, x.t(), w.t(), y.t(), ws.t());
    const std::vector<float> expected = DirectConv(g, x, w);
    for (size_t i = 0; i < expected.size(); ++i)
      ASSERT_NEAR(y.data[i], expected[i], 1e-5) << c.name << " at " << i;
  }
}

TEST(ConvTest, BackwardMatchesFiniteDifferences) {
  for (const ConvCase& c : Cases()) {
    const ConvGeometry& g = c.g;
    Buffer x({g.batch, g.in_channels, g.in[0], g.in[1], g.in[2]});
    Buffer w({g.out_channels, g.group_in_channels(), g.kernel[0], g.kernel[1], g.kernel[2]});
    Buffer y({g.batch, g.out_channels, g.out(0), g.out(1), g.out(2)});
    Buffer r = y, dx = x, dw = w;
    Buffer ws({cpu::ConvWorkspaceElements(g) + 1});
    testing::FillRandom(x, 3);
    testing::FillRandom(w, 4);
    testing::FillRandom(r, 5);
    auto loss = [&] {
      cpu::ConvForward(g, x.t(), w.t(), y.t(), ws.t());
      return testing::Dot(y, r);
    };
    cpu::ConvBackwardData(g, r.t(), w.t(), dx.t(), ws.t());
    cpu::ConvBackwardWeight(g, x.t(), r.t(), dw.t(), ws.t());
    testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 2e-3, c.name);
    testing::ExpectGradientMatches(w, dw.data, loss, 1e-2, 2e-3, c.name);
  }
}

// ConvTranspose3d(k=2, s=2) as in the 3D U-Net upsampling blocks: the
// transposed conv is the adjoint, <conv(y), x> == <y, convT(x)>.
TEST(ConvTest, TransposedConvIsTheAdjointAndItsGradientsMatch) {
  const int64_t n = 2, cin = 3, cout = 2;
  ConvGeometry g = Conv3d(n, cout, 4, 4, 2, cin, 2, 2, 0);  // maps the output back to the input
  Buffer x({n, cin, g.out(0), g.out(1), g.out(2)});
  Buffer w({cin, cout, 2, 2, 2});
  Buffer y({n, cout, 4, 4, 2});
  Buffer probe = y, conv_of_probe = x, r = y;
  Buffer ws({cpu::ConvWorkspaceElements(g) + 1});
  testing::FillRandom(x, 6);
  testing::FillRandom(w, 7);
  testing::FillRandom(probe, 8);
  testing::FillRandom(r, 9);
  ops::ConvTransposeForward(g, x.t(), w.t(), y.t(), ws.t());
  cpu::ConvForward(g, probe.t(), w.t(), conv_of_probe.t(), ws.t());
  EXPECT_NEAR(testing::Dot(y, probe), testing::Dot(x, conv_of_probe), 1e-4);

  Buffer dx = x, dw = w;
  auto loss = [&] {
    ops::ConvTransposeForward(g, x.t(), w.t(), y.t(), ws.t());
    return testing::Dot(y, r);
  };
  ops::ConvTransposeBackwardData(g, r.t(), w.t(), dx.t(), ws.t());
  ops::ConvTransposeBackwardWeight(g, x.t(), r.t(), dw.t(), ws.t());
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 2e-3, "convT dx");
  testing::ExpectGradientMatches(w, dw.data, loss, 1e-2, 2e-3, "convT dw");
}

TEST(ConvTest, BiasGradientMatchesFiniteDifferences) {
  Buffer y({2, 3, 4, 5}), bias({3}), r = y, dbias = bias;
  testing::FillRandom(bias, 10);
  testing::FillRandom(r, 11);
  auto loss = [&] {
    std::fill(y.data.begin(), y.data.end(), 0.0f);
    cpu::BiasAddChannels(bias.t(), y.t());
    return testing::Dot(y, r);
  };
  cpu::BiasBackwardChannels(r.t(), dbias.t());
  testing::ExpectGradientMatches(bias, dbias.data, loss, 1e-2, 2e-3, "bias");
}

}  // namespace
}  // namespace mlperf
