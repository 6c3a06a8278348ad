// Label `gpu`: the cuDNN-backed and own-kernel CUDA twins added for the CNN,
// U-Net and BERT models against their CPU twins on Philox random inputs:
// convolutions (2-D, 3-D, transposed, uneven "same" padding, NCHW and NHWC,
// fp32/bf16/fp16), instance and layer norm (batch norm: cuda_norm_twin_test),
// pooling, embedding, losses,
// attention and mixed-precision GEMM. Half-precision cases feed the CPU twin
// the same rounded inputs, so only accumulation/rounding differences remain.
// NaN/Inf positions must agree exactly. Skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "reference/core/dtype.h"
#include "reference/core/philox.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/norm.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/embedding.h"
#include "reference/kernels/ops/loss.h"
#include "reference/kernels/ops/pool.h"
#include "tests/core/cuda_twin_util.h"

namespace mlperf {
namespace {

using namespace twin;  // NOLINT: the shared helpers of the twin tests

class CudaCnnTwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device; the CPU twins are tested";
  }
};

bool Is2d(const ConvGeometry& g) { return g.in[0] == 1 && g.kernel[0] == 1; }

Shape ActShape(const ConvGeometry& g, int64_t c, const int64_t sp[3], bool channels_last) {
  if (Is2d(g))
    return channels_last ? Shape{g.batch, sp[1], sp[2], c} : Shape{g.batch, c, sp[1], sp[2]};
  return channels_last ? Shape{g.batch, sp[0], sp[1], sp[2], c}
                       : Shape{g.batch, c, sp[0], sp[1], sp[2]};
}

Layout ActLayout(const ConvGeometry& g, bool channels_last) {
  if (Is2d(g)) return channels_last ? Layout::kNHWC : Layout::kNCHW;
  return channels_last ? Layout::kNDHWC : Layout::kNCDHW;
}

// Forward, data and weight gradients of one convolution, in one dtype and
// layout, against the CPU twin on the same (rounded) values.
void CheckConv(const std::string& name, const ConvGeometry& g, DType dtype, bool channels_last) {
  const std::string what = name + " " + Name(dtype) + (channels_last ? " nhwc" : " nchw");
  const int64_t out_sp[3] = {g.out(0), g.out(1), g.out(2)};
  const int64_t nx = g.batch * g.in_channels * g.in_spatial();
  const int64_t nw = g.weight_elements(), cw = g.group_in_channels();
  const int64_t ny = g.batch * g.out_channels * g.out_spatial();
  Floats x = Rounded(Random(nx, 1), dtype), w = Rounded(Random(nw, 2), dtype),
         dy = Rounded(Random(ny, 3), dtype);
  Floats y(ny), dx(nx), dw(nw), ws(cpu::ConvWorkspaceElements(g) + 1);
  const Tensor cws = Host(ws, {static_cast<int64_t>(ws.size())});
  cpu::ConvForward(g, Host(x, {nx}), Host(w, {nw}), Host(y, {ny}), cws);
  cpu::ConvBackwardData(g, Host(dy, {ny}), Host(w, {nw}), Host(dx, {nx}), cws);
  cpu::ConvBackwardWeight(g, Host(x, {nx}), Host(dy, {ny}), Host(dw, {nw}), cws);

  const Layout layout = ActLayout(g, channels_last);
  auto act = [&](const Floats& v, int64_t c, const int64_t* sp) {
    return std::make_unique<Dev>(channels_last ? ToChannelsLast(v, g.batch, c) : v,
                                 ActShape(g, c, sp, channels_last), dtype, layout);
  };
  // Weights: [K, C, k...] or, channels-last, [K, k..., C].
  const Shape wshape =
      Is2d(g) ? (channels_last ? Shape{g.out_channels, g.kernel[1], g.kernel[2], cw}
                               : Shape{g.out_channels, cw, g.kernel[1], g.kernel[2]})
              : (channels_last ? Shape{g.out_channels, g.kernel[0], g.kernel[1], g.kernel[2], cw}
                               : Shape{g.out_channels, cw, g.kernel[0], g.kernel[1], g.kernel[2]});
  Dev gw(channels_last ? ToChannelsLast(w, g.out_channels, cw) : w, wshape, dtype, layout);
  auto gx = act(x, g.in_channels, g.in), gdx = act(Floats(nx), g.in_channels, g.in);
  auto gy = act(Floats(ny), g.out_channels, out_sp), gdy = act(dy, g.out_channels, out_sp);
  Dev gdw(Floats(nw), wshape, dtype, layout);
  cuda::ConvForward(g, gx->t(), gw.t(), gy->t(), Tensor());
  cuda::ConvBackwardData(g, gdy->t(), gw.t(), gdx->t(), Tensor());
  cuda::ConvBackwardWeight(g, gx->t(), gdy->t(), gdw.t(), Tensor());
  auto back = [&](const Floats& v, int64_t n, int64_t c) {
    return channels_last ? FromChannelsLast(v, n, c) : v;
  };
  const double tol = Tolerance(dtype);
  ExpectClose(back(gy->Get(), g.batch, g.out_channels), y, tol, what + " forward");
  ExpectClose(back(gdx->Get(), g.batch, g.in_channels), dx, tol, what + " data grad");
  ExpectClose(back(gdw.Get(), g.out_channels, cw), dw, tol, what + " weight grad");
}

std::vector<std::pair<std::string, ConvGeometry>> ConvCases() {
  ConvGeometry same = Conv2d(2, 3, 7, 6, 4, 3, 3, 2, 0);
  SetSamePadding(&same);
  ConvGeometry asym3d = Conv3d(1, 2, 4, 5, 3, 3, 3, 2, 1);
  asym3d.pad_end[1] = 0;
  return {{"conv2d_3x3_s1_p1", Conv2d(2, 8, 9, 7, 16, 3, 3, 1, 1)},
          {"conv2d_7x7_s2_p3", Conv2d(2, 3, 15, 14, 8, 7, 7, 2, 3)},
          {"conv2d_same_s2", same},
          {"conv2d_1x1", Conv2d(2, 16, 5, 5, 8, 1, 1, 1, 0)},
          {"conv2d_1x1_s2", Conv2d(2, 8, 6, 6, 16, 1, 1, 2, 0)},
          {"conv3d_3_s1_p1", Conv3d(2, 4, 5, 4, 6, 8, 3, 1, 1)},
          {"conv3d_asym_pad_s2", asym3d}};
}

TEST_F(CudaCnnTwinTest, ConvolutionsFp32Nchw) {
  for (const auto& [name, g] : ConvCases()) CheckConv(name, g, DType::kF32, false);
}

// ResNeXt's grouped convolutions (cuDNN's group count): fp32 channels-first
// and bf16 channels-last against the CPU's channels-first twin.
TEST_F(CudaCnnTwinTest, GroupedConvolutions) {
  ConvGeometry s1 = Conv2d(2, 64, 9, 7, 64, 3, 3, 1, 1), s2 = Conv2d(2, 64, 10, 10, 64, 3, 3, 2, 1);
  s1.groups = s2.groups = 32;
  for (const auto& [name, g] : {std::pair{"grouped_s1", s1}, std::pair{"grouped_s2", s2}}) {
    CheckConv(name, g, DType::kF32, false);
    CheckConv(name, g, DType::kBF16, true);
  }
}

TEST_F(CudaCnnTwinTest, ConvolutionsHalfPrecisionChannelsLast) {
  // Channel counts that are multiples of 8, as tensor-core NHWC kernels want.
  ConvGeometry same = Conv2d(2, 8, 9, 9, 16, 3, 3, 2, 0);
  SetSamePadding(&same);
  const std::vector<std::pair<std::string, ConvGeometry>> cases = {
      {"conv2d_3x3", Conv2d(2, 16, 8, 8, 32, 3, 3, 1, 1)},
      {"conv2d_1x1", Conv2d(2, 32, 7, 7, 16, 1, 1, 1, 0)},
      {"conv2d_same_s2", same},
      {"conv3d_3", Conv3d(1, 8, 4, 4, 4, 16, 3, 1, 1)}};
  for (DType t : {DType::kBF16, DType::kF16, DType::kF32})
    for (const auto& [name, g] : cases) CheckConv(name, g, t, true);
  for (DType t : {DType::kBF16, DType::kF16})
    for (const auto& [name, g] : cases) CheckConv(name, g, t, false);
}

TEST_F(CudaCnnTwinTest, TransposedConv3dAndBias) {
  // U-Net upsampling: kernel 2, stride 2; g is the adjoint convolution.
  const ConvGeometry g = Conv3d(2, 4, 6, 6, 6, 8, 2, 2, 0);
  const int64_t nbig = g.batch * g.in_channels * g.in_spatial();
  const int64_t nsmall = g.batch * g.out_channels * g.out_spatial();
  const int64_t nw = g.out_channels * g.in_channels * g.kernel_volume();
  Floats x = Random(nsmall, 4), w = Random(nw, 5), dy = Random(nbig, 6);
  Floats y(nbig), dx(nsmall), dw(nw), ws(cpu::ConvWorkspaceElements(g) + 1);
  const Tensor cws = Host(ws, {static_cast<int64_t>(ws.size())});
  ops::ConvTransposeForward(g, Host(x, {nsmall}), Host(w, {nw}), Host(y, {nbig}), cws);
  ops::ConvTransposeBackwardData(g, Host(dy, {nbig}), Host(w, {nw}), Host(dx, {nsmall}), cws);
  ops::ConvTransposeBackwardWeight(g, Host(x, {nsmall}), Host(dy, {nbig}), Host(dw, {nw}), cws);
  const Shape big{2, 4, 6, 6, 6}, small{2, 8, 3, 3, 3}, wshape{8, 4, 2, 2, 2};
  Dev gx(x, small, DType::kF32, Layout::kNCDHW), gw(w, wshape),
      gdy(dy, big, DType::kF32, Layout::kNCDHW);
  Dev gy(Floats(nbig), big, DType::kF32, Layout::kNCDHW),
      gdx(Floats(nsmall), small, DType::kF32, Layout::kNCDHW), gdw(Floats(nw), wshape);
  ops::ConvTransposeForward(g, gx.t(), gw.t(), gy.t(), Tensor());
  ops::ConvTransposeBackwardData(g, gdy.t(), gw.t(), gdx.t(), Tensor());
  ops::ConvTransposeBackwardWeight(g, gx.t(), gdy.t(), gdw.t(), Tensor());
  ExpectClose(gy.Get(), y, 1e-4, "conv transpose forward");
  ExpectClose(gdx.Get(), dx, 1e-4, "conv transpose data grad");
  ExpectClose(gdw.Get(), dw, 1e-4, "conv transpose weight grad");

  // Bias add and its gradient, both layouts.
  Floats b = Random(4, 7), db(4), yb = y;
  cpu::BiasAddChannels(Host(b, {4}), Host(yb, big));
  cpu::BiasBackwardChannels(Host(dy, big), Host(db, {4}));
  for (bool cl : {false, true}) {
    Dev gb(b, {4}), gdb(Floats(4), {4});
    Dev gyb(cl ? ToChannelsLast(y, 2, 4) : y, cl ? Shape{2, 6, 6, 6, 4} : big, DType::kF32,
            cl ? Layout::kNDHWC : Layout::kNCDHW);
    Dev gdyb(cl ? ToChannelsLast(dy, 2, 4) : dy, cl ? Shape{2, 6, 6, 6, 4} : big, DType::kF32,
             cl ? Layout::kNDHWC : Layout::kNCDHW);
    cuda::BiasAddChannels(gb.t(), gyb.t());
    cuda::BiasBackwardChannels(gdyb.t(), gdb.t());
    ExpectClose(cl ? FromChannelsLast(gyb.Get(), 2, 4) : gyb.Get(), yb, 1e-6, "bias add");
    ExpectClose(gdb.Get(), db, 1e-5, "bias grad");
  }
}

TEST_F(CudaCnnTwinTest, InstanceAndLayerNorm) {
  {
    const int64_t n = 2, c = 3, s = 4 * 5 * 6, total = n * c * s;
    Floats x = Random(total, 12, -2.0f, 2.0f), dy = Random(total, 13);
    Floats gamma = Random(c, 14, 0.5f, 1.5f), beta = Random(c, 15);
    Floats y(total), mean(n * c), istd(n * c), dx(total), dg(c), db(c);
    const Shape shape{n, c, 4, 5, 6};
    cpu::InstanceNormForward(1e-5f, Host(x, shape), Host(gamma, {c}), Host(beta, {c}),
                             Host(y, shape), Host(mean, {n * c}), Host(istd, {n * c}));
    cpu::InstanceNormBackward(Host(x, shape), Host(dy, shape), Host(gamma, {c}),
                              Host(mean, {n * c}), Host(istd, {n * c}), Host(dx, shape),
                              Host(dg, {c}), Host(db, {c}));
    Dev gx(x, shape, DType::kF32, Layout::kNCDHW), gdy(dy, shape, DType::kF32, Layout::kNCDHW),
        gy(Floats(total), shape), gdx(Floats(total), shape), ggamma(gamma, {c}), gbeta(beta, {c}),
        gmean(Floats(n * c), {n * c}), gistd(Floats(n * c), {n * c}), gdg(Floats(c), {c}),
        gdb(Floats(c), {c});
    cuda::InstanceNormForward(1e-5f, gx.t(), ggamma.t(), gbeta.t(), gy.t(), gmean.t(), gistd.t());
    cuda::InstanceNormBackward(gx.t(), gdy.t(), ggamma.t(), gmean.t(), gistd.t(), gdx.t(), gdg.t(),
                               gdb.t());
    ExpectClose(gy.Get(), y, 1e-4, "instance norm y");
    ExpectClose(gistd.Get(), istd, 1e-4, "instance norm inv std");
    ExpectClose(gdx.Get(), dx, 1e-4, "instance norm dx");
    ExpectClose(gdg.Get(), dg, 1e-4, "instance norm dgamma");
    ExpectClose(gdb.Get(), db, 1e-4, "instance norm dbeta");
    // The same in NDHWC against the channels-first CPU results.
    const Shape last{n, 4, 5, 6, c};
    Dev lx(ToChannelsLast(x, n, c), last, DType::kF32, Layout::kNDHWC),
        ldy(ToChannelsLast(dy, n, c), last, DType::kF32, Layout::kNDHWC),
        ly(Floats(total), last, DType::kF32, Layout::kNDHWC),
        ldx(Floats(total), last, DType::kF32, Layout::kNDHWC);
    cuda::InstanceNormForward(1e-5f, lx.t(), ggamma.t(), gbeta.t(), ly.t(), gmean.t(), gistd.t());
    cuda::InstanceNormBackward(lx.t(), ldy.t(), ggamma.t(), gmean.t(), gistd.t(), ldx.t(), gdg.t(),
                               gdb.t());
    ExpectClose(FromChannelsLast(ly.Get(), n, c), y, 1e-4, "instance norm ndhwc y");
    ExpectClose(FromChannelsLast(ldx.Get(), n, c), dx, 1e-4, "instance norm ndhwc dx");
    ExpectClose(gdg.Get(), dg, 1e-4, "instance norm ndhwc dgamma");
    ExpectClose(gdb.Get(), db, 1e-4, "instance norm ndhwc dbeta");
    // Skip concatenation channels-last: [upsampled, skip] per voxel, and its split.
    Floats x_last = ToChannelsLast(x, n, c), dy_last = ToChannelsLast(dy, n, c);
    Floats cat_host(2 * total);
    const Shape cat_shape{n, 4, 5, 6, 2 * c};
    ops::ConcatChannels(
        Tensor(x_last.data(), last, DType::kF32, core::Device::kCpu, Layout::kNDHWC),
        Tensor(dy_last.data(), last, DType::kF32, core::Device::kCpu, Layout::kNDHWC),
        Tensor(cat_host.data(), cat_shape, DType::kF32, core::Device::kCpu, Layout::kNDHWC));
    Dev gcat(Floats(2 * total), cat_shape, DType::kF32, Layout::kNDHWC);
    ops::ConcatChannels(lx.t(), ldy.t(), gcat.t());
    ExpectClose(gcat.Get(), cat_host, 0.0, "concat ndhwc");
    ops::SplitChannels(gcat.t(), ly.t(), ldx.t());
    ExpectClose(ly.Get(), x_last, 0.0, "split ndhwc, first part");
    ExpectClose(ldx.Get(), dy_last, 0.0, "split ndhwc, second part");
  }
  {
    const int64_t rows = 300, features = 96, total = rows * features;
    Floats x = Random(total, 16, -2.0f, 2.0f), dy = Random(total, 17);
    x[5] = NAN;  // a NaN poisons its row on both backends
    Floats gamma = Random(features, 18, 0.5f, 1.5f), beta = Random(features, 19);
    Floats y(total), mean(rows), istd(rows), dx(total), dg(features), db(features);
    const Shape shape{rows, features};
    cpu::LayerNormForward(1e-12f, Host(x, shape), Host(gamma, {features}), Host(beta, {features}),
                          Host(y, shape), Host(mean, {rows}), Host(istd, {rows}));
    cpu::LayerNormBackward(Host(x, shape), Host(dy, shape), Host(gamma, {features}),
                           Host(mean, {rows}), Host(istd, {rows}), Host(dx, shape),
                           Host(dg, {features}), Host(db, {features}));
    Dev gx(x, shape), gdy(dy, shape), gy(Floats(total), shape), gdx(Floats(total), shape),
        ggamma(gamma, {features}), gbeta(beta, {features}), gmean(Floats(rows), {rows}),
        gistd(Floats(rows), {rows}), gdg(Floats(features), {features}),
        gdb(Floats(features), {features});
    cuda::LayerNormForward(1e-12f, gx.t(), ggamma.t(), gbeta.t(), gy.t(), gmean.t(), gistd.t());
    cuda::LayerNormBackward(gx.t(), gdy.t(), ggamma.t(), gmean.t(), gistd.t(), gdx.t(), gdg.t(),
                            gdb.t());
    ExpectClose(gy.Get(), y, 1e-4, "layer norm y");
    ExpectClose(gdx.Get(), dx, 1e-4, "layer norm dx");
    ExpectClose(gdg.Get(), dg, 1e-4, "layer norm dgamma");
    ExpectClose(gdb.Get(), db, 1e-4, "layer norm dbeta");
  }
}

TEST_F(CudaCnnTwinTest, PoolingMatchesIncludingSamePaddingAndNonFinite) {
  ConvGeometry same = Conv2d(2, 3, 11, 11, 3, 3, 3, 2, 0);
  SetSamePadding(&same);  // ResNet's max pool: 0 before, 1 after
  const std::vector<std::pair<std::string, ConvGeometry>> cases = {
      {"same_3x3_s2", same},
      {"sym_3x3_s2_p1", Conv2d(2, 3, 10, 9, 3, 3, 3, 2, 1)},
      {"2x2_s2", Conv2d(2, 3, 8, 8, 3, 2, 2, 2, 0)},
      {"3d_2_s2", Conv3d(1, 2, 4, 6, 4, 2, 2, 2, 0)},
      {"3d_3_s2_p1", Conv3d(1, 2, 5, 6, 5, 2, 3, 2, 1)}};
  for (const auto& [name, g] : cases)
    for (bool cl : {false, true}) {
      const std::string what = name + (cl ? " nhwc" : " nchw");
      const int64_t nx = g.batch * g.in_channels * g.in_spatial();
      const int64_t ny = g.batch * g.in_channels * g.out_spatial();
      Floats x = Random(nx, 20), dy = Random(ny, 21);
      // Ties, as after a ReLU (zeros) and among small integers: the first
      // maximum in the window takes the gradient on both.
      for (int64_t i = 0; i < nx; i += 3) x[i] = 0.0f;
      for (int64_t i = 1; i < nx; i += 3) x[i] = std::round(4.0f * x[i]);
      x[3] = INFINITY;
      x[nx / 2] = NAN;
      const int64_t out_sp[3] = {g.out(0), g.out(1), g.out(2)};
      const Layout layout = ActLayout(g, cl);
      auto put = [&](const Floats& v, const int64_t* sp) {
        return std::make_unique<Dev>(cl ? ToChannelsLast(v, g.batch, g.in_channels) : v,
                                     ActShape(g, g.in_channels, sp, cl), DType::kF32, layout);
      };
      auto get = [&](const Dev& d) {
        return cl ? FromChannelsLast(d.Get(), g.batch, g.in_channels) : d.Get();
      };
      auto gx = put(x, g.in), gdy = put(dy, out_sp), gy = put(Floats(ny), out_sp),
           gdx = put(Floats(nx), g.in);
      Floats y(ny), dx(nx);
      ops::MaxPoolForward(g, Host(x, {nx}), Host(y, {ny}));
      ops::MaxPoolBackward(g, Host(x, {nx}), Host(dy, {ny}), Host(dx, {nx}));
      ops::MaxPoolForward(g, gx->t(), gy->t());
      ops::MaxPoolBackward(g, gx->t(), gdy->t(), gdx->t());
      ExpectClose(get(*gy), y, 0.0, what + " max forward");
      ExpectClose(get(*gdx), dx, 0.0, what + " max backward");
      for (bool include_pad : {false, true}) {
        ops::AvgPoolForward(g, include_pad, Host(x, {nx}), Host(y, {ny}));
        ops::AvgPoolBackward(g, include_pad, Host(dy, {ny}), Host(dx, {nx}));
        ops::AvgPoolForward(g, include_pad, gx->t(), gy->t());
        ops::AvgPoolBackward(g, include_pad, gdy->t(), gdx->t());
        ExpectClose(get(*gy), y, 1e-6, what + " avg forward");
        ExpectClose(get(*gdx), dx, 1e-6, what + " avg backward");
      }
    }
  // Global average pooling (channels-last: a thread per channel, 70 of them
  // spanning more than one warp).
  for (const int64_t c : {5, 70}) {
    const int64_t n = 3, s = 49;
    Floats x = Random(n * c * s, 22), dy = Random(n * c, 23), y(n * c), dx(n * c * s);
    ops::GlobalAvgPoolForward(Host(x, {n, c, 7, 7}), Host(y, {n, c}));
    ops::GlobalAvgPoolBackward(Host(dy, {n, c}), Host(dx, {n, c, 7, 7}));
    for (bool cl : {false, true}) {
      const Shape shape = cl ? Shape{n, 7, 7, c} : Shape{n, c, 7, 7};
      const Layout layout = cl ? Layout::kNHWC : Layout::kNCHW;
      Dev gx(cl ? ToChannelsLast(x, n, c) : x, shape, DType::kF32, layout),
          gy(Floats(n * c), {n, c}), gdy(dy, {n, c}),
          gdx(Floats(n * c * s), shape, DType::kF32, layout);
      ops::GlobalAvgPoolForward(gx.t(), gy.t());
      ops::GlobalAvgPoolBackward(gdy.t(), gdx.t());
      ExpectClose(gy.Get(), y, 1e-5, "global avg forward");
      ExpectClose(cl ? FromChannelsLast(gdx.Get(), n, c) : gdx.Get(), dx, 1e-6,
                  "global avg backward");
    }
  }
}

// Channels-last max pooling with a channel count that is a multiple of 16
// bytes' worth runs the lane kernels (16 bytes of channels per thread); 12
// bf16 channels do not. Both give the CPU twin's bits in every dtype: the
// same first maximum, the same sums in the same order, one rounding.
TEST_F(CudaCnnTwinTest, ChannelsLastMaxPoolMatchesBitForBitInEveryDtype) {
  ConvGeometry same = Conv2d(2, 16, 11, 11, 16, 3, 3, 2, 0);
  SetSamePadding(&same);
  const std::vector<std::pair<std::string, ConvGeometry>> cases = {
      {"same_3x3_s2 c16", same},
      {"sym_3x3_s2_p1 c24", Conv2d(2, 24, 10, 9, 24, 3, 3, 2, 1)},
      {"sym_3x3_s2_p1 c12", Conv2d(2, 12, 10, 9, 12, 3, 3, 2, 1)},
      {"3d_3_s2_p1 c8", Conv3d(1, 8, 5, 6, 5, 8, 3, 2, 1)}};
  for (const auto& [name, g] : cases)
    for (const DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      const std::string what = name + " " + Name(dtype);
      const int64_t c = g.in_channels, nx = g.batch * c * g.in_spatial(),
                    ny = g.batch * c * g.out_spatial();
      Floats x = Rounded(Random(nx, 30), dtype), dy = Rounded(Random(ny, 31), dtype);
      for (int64_t i = 0; i < nx; i += 3) x[i] = 0.0f;
      for (int64_t i = 1; i < nx; i += 3) x[i] = std::round(4.0f * x[i]);
      x[5] = INFINITY;
      x[nx / 2 + 1] = NAN;
      Floats y(ny), dx(nx);
      ops::MaxPoolForward(g, Host(x, {nx}), Host(y, {ny}));
      ops::MaxPoolBackward(g, Host(x, {nx}), Host(dy, {ny}), Host(dx, {nx}));
      const int64_t out_sp[3] = {g.out(0), g.out(1), g.out(2)};
      const Layout layout = ActLayout(g, true);
      Dev gx(ToChannelsLast(x, g.batch, c), ActShape(g, c, g.in, true), dtype, layout),
          gdy(ToChannelsLast(dy, g.batch, c), ActShape(g, c, out_sp, true), dtype, layout),
          gy(Floats(ny), ActShape(g, c, out_sp, true), dtype, layout),
          gdx(Floats(nx), ActShape(g, c, g.in, true), dtype, layout);
      ops::MaxPoolForward(g, gx.t(), gy.t());
      ops::MaxPoolBackward(g, gx.t(), gdy.t(), gdx.t());
      ExpectClose(FromChannelsLast(gy.Get(), g.batch, c), Rounded(y, dtype), 0.0,
                  what + " max forward");
      ExpectClose(FromChannelsLast(gdx.Get(), g.batch, c), Rounded(dx, dtype), 0.0,
                  what + " max backward");
    }
}

// A window larger than the unpadded input has no outputs: the forwards write
// nothing and the backwards zero the input gradient.
TEST_F(CudaCnnTwinTest, PoolingWithoutOutputsZeroesTheGradient) {
  const ConvGeometry g = Conv2d(1, 8, 2, 2, 8, 3, 3, 1, 0);
  ASSERT_EQ(g.out_spatial(), 0);
  const Shape in{1, 2, 2, 8};
  Dev x(Random(32, 32), in, DType::kBF16, Layout::kNHWC);
  const Tensor empty(x.t().data(), {1, 0, 0, 8}, DType::kBF16, core::Device::kCuda, Layout::kNHWC);
  for (const bool max : {true, false}) {
    Dev dx(Floats(32, 5.0f), in, DType::kBF16, Layout::kNHWC);
    if (max) {
      ops::MaxPoolForward(g, x.t(), empty);
      ops::MaxPoolBackward(g, x.t(), empty, dx.t());
    } else {
      ops::AvgPoolForward(g, true, x.t(), empty);
      ops::AvgPoolBackward(g, true, empty, dx.t());
    }
    ExpectClose(dx.Get(), Floats(32, 0.0f), 0.0, max ? "max backward" : "avg backward");
  }
}

// Channels-last concatenation and split in every dtype: 16-byte copies
// where both parts' rows are whole 16-byte units (32 + 32 and 24 + 40
// channels of bf16, 24 + 40 of fp32), the 2-D copy otherwise (12 + 20 of
// bf16); the CPU's values exactly either way.
TEST_F(CudaCnnTwinTest, ChannelsLastConcatAndSplitCopyExactly) {
  const int64_t n = 2, d = 3, h = 5, w = 7, rows = n * d * h * w;
  const struct {
    int64_t ca, cb;
    DType dtype;
  } cases[] = {{32, 32, DType::kBF16},
               {24, 40, DType::kBF16},
               {24, 40, DType::kF32},
               {12, 20, DType::kBF16},
               {24, 40, DType::kF16}};
  for (const auto& c : cases) {
    const std::string what =
        std::to_string(c.ca) + "+" + std::to_string(c.cb) + " " + Name(c.dtype);
    const int64_t cy = c.ca + c.cb;
    Floats a = Rounded(Random(rows * c.ca, 50), c.dtype),
           b = Rounded(Random(rows * c.cb, 51), c.dtype), y(rows * cy);
    const auto host = [](Floats& v, int64_t channels) {
      return Tensor(v.data(), {2, 3, 5, 7, channels}, DType::kF32, core::Device::kCpu,
                    Layout::kNDHWC);
    };
    ops::ConcatChannels(host(a, c.ca), host(b, c.cb), host(y, cy));
    const auto dev = [&](const Floats& v, int64_t channels) {
      return std::make_unique<Dev>(v, Shape{2, 3, 5, 7, channels}, c.dtype, Layout::kNDHWC);
    };
    auto ga = dev(a, c.ca), gb = dev(b, c.cb), gy = dev(Floats(rows * cy), cy),
         ga2 = dev(Floats(rows * c.ca), c.ca), gb2 = dev(Floats(rows * c.cb), c.cb);
    ops::ConcatChannels(ga->t(), gb->t(), gy->t());
    ExpectClose(gy->Get(), y, 0.0, what + " concat");
    ops::SplitChannels(gy->t(), ga2->t(), gb2->t());
    ExpectClose(ga2->Get(), a, 0.0, what + " split, first part");
    ExpectClose(gb2->Get(), b, 0.0, what + " split, second part");
  }
}

TEST_F(CudaCnnTwinTest, EmbeddingAndLosses) {
  const int64_t rows = 37, vocab = 50, width = 24;
  std::vector<int32_t> ids(rows);
  for (int64_t i = 0; i < rows; ++i) ids[i] = static_cast<int32_t>(core::PhiloxBits(24, 0, i) % 10);
  Floats table = Random(vocab * width, 25), dy = Random(rows * width, 26);
  Floats y(rows * width), dtable(vocab * width);
  const Tensor cids(ids.data(), {rows}, DType::kI32);
  ops::EmbeddingForward(cids, Host(table, {vocab, width}), Host(y, {rows, width}));
  ops::EmbeddingBackward(cids, Host(dy, {rows, width}), Host(dtable, {vocab, width}));
  Dev gids(ids, {rows}), gtable(table, {vocab, width}), gdy(dy, {rows, width}),
      gy(Floats(rows * width), {rows, width}), gdtable(Floats(vocab * width), {vocab, width});
  ops::EmbeddingForward(gids.t(), gtable.t(), gy.t());
  ops::EmbeddingBackward(gids.t(), gdy.t(), gdtable.t());
  ExpectClose(gy.Get(), y, 0.0, "embedding forward");
  ExpectClose(gdtable.Get(), dtable, 0.0, "embedding backward (same summation order)");
  ops::EmbeddingBackward(cids, Host(dy, {rows, width}), Host(dtable, {vocab, width}), true);
  ops::EmbeddingBackward(gids.t(), gdy.t(), gdtable.t(), true);
  ExpectClose(gdtable.Get(), dtable, 0.0, "embedding backward, accumulated");

  // Cross-entropy with label smoothing over 1000 classes.
  const int64_t n = 16, classes = 1000;
  std::vector<int32_t> labels(n);
  for (int64_t i = 0; i < n; ++i)
    labels[i] = static_cast<int32_t>(core::PhiloxBits(27, 0, i) % classes);
  Floats logits = Random(n * classes, 28, -5.0f, 5.0f), loss(1), dlogits(n * classes);
  const Tensor clabels(labels.data(), {n}, DType::kI32);
  ops::SoftmaxCrossEntropy(0.1f, 64.0f, Host(logits, {n, classes}), clabels, Host(loss, {1}),
                           Host(dlogits, {n, classes}));
  Dev glabels(labels, {n}), glogits(logits, {n, classes}), gloss(Floats(1), {1}),
      gdlogits(Floats(n * classes), {n, classes});
  ops::SoftmaxCrossEntropy(0.1f, 64.0f, glogits.t(), glabels.t(), gloss.t(), gdlogits.t());
  ExpectClose(gloss.Get(), loss, 1e-5, "cross-entropy loss");
  ExpectClose(gdlogits.Get(), dlogits, 1e-5, "cross-entropy gradient");

  // Masked-LM loss with padding weights.
  Floats weights(n);
  for (int64_t i = 0; i < n; ++i) weights[i] = i % 3 == 2 ? 0.0f : 1.0f;
  ops::MaskedLmLoss(Host(logits, {n, classes}), clabels, Host(weights, {n}), Host(loss, {1}),
                    Host(dlogits, {n, classes}));
  Dev gweights(weights, {n});
  ops::MaskedLmLoss(glogits.t(), glabels.t(), gweights.t(), gloss.t(), gdlogits.t());
  ExpectClose(gloss.Get(), loss, 1e-5, "masked-LM loss");
  ExpectClose(gdlogits.Get(), dlogits, 1e-5, "masked-LM gradient");
  // 3D U-Net Dice + cross-entropy on [2, 3, 4, 5, 6] logits.
  const int64_t dn = 2, dc = 3, ds = 4 * 5 * 6;
  const Shape dshape{dn, dc, 4, 5, 6};
  std::vector<int32_t> voxel_labels(dn * ds);
  for (int64_t i = 0; i < dn * ds; ++i)
    voxel_labels[i] = static_cast<int32_t>(core::PhiloxBits(29, 0, i) % dc);
  Floats dlog = Random(dn * dc * ds, 34, -3.0f, 3.0f), dloss(1), ddlog(dn * dc * ds);
  Floats dws(cpu::DiceCrossEntropyWorkspaceElements(dn, dc, ds));
  const Tensor cvoxel_labels(voxel_labels.data(), {dn, 4, 5, 6}, DType::kI32);
  ops::DiceCrossEntropy(Host(dlog, dshape), cvoxel_labels, Host(dloss, {1}), Host(ddlog, dshape),
                        Host(dws, {static_cast<int64_t>(dws.size())}));
  Dev gvoxel_labels(voxel_labels, {dn, 4, 5, 6}), gdlog(dlog, dshape), gdloss(Floats(1), {1}),
      gddlog(Floats(dn * dc * ds), dshape),
      gdws(Floats(dws.size()), {static_cast<int64_t>(dws.size())});
  ops::DiceCrossEntropy(gdlog.t(), gvoxel_labels.t(), gdloss.t(), gddlog.t(), gdws.t());
  ExpectClose(gdloss.Get(), dloss, 1e-5, "dice + cross-entropy loss");
  ExpectClose(gddlog.Get(), ddlog, 1e-6, "dice + cross-entropy gradient");
  // Channels-last logits [2, 4, 5, 6, 3].
  const Shape dlast{dn, 4, 5, 6, dc};
  Dev ldlog(ToChannelsLast(dlog, dn, dc), dlast, DType::kF32, Layout::kNDHWC),
      lddlog(Floats(dn * dc * ds), dlast, DType::kF32, Layout::kNDHWC);
  ops::DiceCrossEntropy(ldlog.t(), gvoxel_labels.t(), gdloss.t(), lddlog.t(), gdws.t());
  ExpectClose(gdloss.Get(), dloss, 1e-5, "dice + cross-entropy loss, ndhwc");
  ExpectClose(FromChannelsLast(lddlog.Get(), dn, dc), ddlog, 1e-6,
              "dice + cross-entropy gradient, ndhwc");
}

TEST_F(CudaCnnTwinTest, AttentionWithPaddingMaskAndDropout) {
  const int64_t b = 2, h = 3, t = 17, d = 16, n = b * h * t * d, nn = b * h * t * t;
  const Shape qs{b, h, t, d};
  Floats q = Random(n, 30), k = Random(n, 31), v = Random(n, 32), dout = Random(n, 33);
  Floats mask(b * t, 1.0f);
  for (int64_t i = 12; i < t; ++i) mask[t + i] = 0.0f;  // second sequence padded
  const AttentionParams p{.dropout = 0.1f, .seed = 99, .offset = 3};
  Floats probs(nn), out(n), ws(nn), dq(n), dk(n), dv(n);
  ops::AttentionForward(p, Host(q, qs), Host(k, qs), Host(v, qs), Host(mask, {b, t}),
                        Host(probs, {b, h, t, t}), Host(out, qs), Host(ws, {nn}));
  ops::AttentionBackward(p, Host(q, qs), Host(k, qs), Host(v, qs), Host(probs, {b, h, t, t}),
                         Host(dout, qs), Host(dq, qs), Host(dk, qs), Host(dv, qs), Host(ws, {nn}));
  Dev gq(q, qs), gk(k, qs), gv(v, qs), gmask(mask, {b, t}), gprobs(Floats(nn), {b, h, t, t}),
      gout(Floats(n), qs), gws(Floats(nn), {nn}), gdout(dout, qs), gdq(Floats(n), qs),
      gdk(Floats(n), qs), gdv(Floats(n), qs);
  ops::AttentionForward(p, gq.t(), gk.t(), gv.t(), gmask.t(), gprobs.t(), gout.t(), gws.t());
  ops::AttentionBackward(p, gq.t(), gk.t(), gv.t(), gprobs.t(), gdout.t(), gdq.t(), gdk.t(),
                         gdv.t(), gws.t());
  ExpectClose(gprobs.Get(), probs, 1e-5, "attention probs");
  ExpectClose(gout.Get(), out, 1e-4, "attention out");
  ExpectClose(gdq.Get(), dq, 1e-4, "attention dq");
  ExpectClose(gdk.Get(), dk, 1e-4, "attention dk");
  ExpectClose(gdv.Get(), dv, 1e-4, "attention dv");
}

TEST_F(CudaCnnTwinTest, MixedPrecisionGemm) {
  const int64_t m = 64, n = 48, k = 96;
  for (DType t : {DType::kBF16, DType::kF16})
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        Floats a = Rounded(Random(m * k, 34), t), b = Rounded(Random(k * n, 35), t), c(m * n);
        cpu::Gemm(ta, tb, m, n, k, 1.0f, a.data(), b.data(), 0.0f, c.data());
        Dev ga(a, ta ? Shape{k, m} : Shape{m, k}, t), gb(b, tb ? Shape{n, k} : Shape{k, n}, t);
        Dev gc32(Floats(m * n), {m, n}), gch(Floats(m * n), {m, n}, t);
        cuda::Gemm(ta, tb, 1.0f, ga.t(), gb.t(), 0.0f, gc32.t());
        cuda::Gemm(ta, tb, 1.0f, ga.t(), gb.t(), 0.0f, gch.t());
        // fp32 output: exact products, fp32 sums in another order.
        ExpectClose(gc32.Get(), c, 1e-4, std::string("gemm fp32 out ") + Name(t));
        ExpectClose(gch.Get(), Rounded(c, t), Tolerance(t),
                    std::string("gemm half out ") + Name(t));
      }
}

}  // namespace
}  // namespace mlperf
