// The host's bf16 activation storage (ops::ActivationStorageType with
// host_typed: ResNet and the 3D U-Net in channels-last under bf16 on AMX):
// every op they run reads and writes bf16 and gives the values of fp32
// storage rounded at its storage points, bit for bit. Skipped on a CPU
// without AMX, where the storage stays fp32.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/philox.h"
#include "reference/kernels/composite.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/round.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::Tensor;
using testing::Buffer;
using testing::FillRandom;

// One channels-last activation in both storages: fp32 holding bf16 values,
// and the same values as bf16 bits.
struct Stored {
  core::Shape shape;
  std::vector<float> f32;
  std::vector<uint16_t> bf16;
  // Uniform in [lo, hi) rounded to bf16 from Philox stream `seed`; zeros
  // (fp32) and 0xffff (bf16, a NaN) for seed 0, so that an op that skips an
  // element shows.
  explicit Stored(core::Shape s, uint64_t seed = 0, float lo = -1.0f, float hi = 1.0f)
      : shape(s), f32(s.numel()), bf16(s.numel(), 0xffff) {
    if (seed == 0) return;
    for (size_t i = 0; i < f32.size(); ++i) {
      f32[i] = cpu::RoundToBf16(lo + (hi - lo) * core::PhiloxUniform(seed, 0, i));
      bf16[i] = cpu::Bf16Bits(f32[i]);
    }
  }
  core::Layout Layout() const {
    return shape.rank() == 5 ? core::Layout::kNDHWC : core::Layout::kNHWC;
  }
  Tensor F32() {
    return Tensor(f32.data(), shape, core::DType::kF32, core::Device::kCpu, Layout());
  }
  Tensor Bf16() {
    return Tensor(bf16.data(), shape, core::DType::kBF16, core::Device::kCpu, Layout());
  }
  std::vector<float> Bf16Values() const {
    std::vector<float> v(bf16.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = cpu::Bf16Value(bf16[i]);
    return v;
  }
};

#define EXPECT_SAME_VALUES(s, msg) EXPECT_EQ((s).Bf16Values(), (s).f32) << msg

class HostBf16Storage : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::GemmsRoundToBf16()) GTEST_SKIP() << "no AMX bf16 here: host storage stays fp32";
  }
  const ops::PrecisionScope precision_{core::DType::kBF16};
  const ops::TypedActivationsScope typed_{true};
};

TEST(HostBf16StorageSwitch, Bf16OnlyForHostTypedModelsUnderBf16OnAmx) {
  const ops::TypedActivationsScope typed(true);
  const auto host = [](bool host_typed) {
    return ops::ActivationStorageType(core::Device::kCpu, host_typed);
  };
  EXPECT_EQ(host(true), core::DType::kF32);  // fp32 compute precision
  {
    const ops::PrecisionScope scope(core::DType::kF16);
    EXPECT_EQ(host(true), core::DType::kF32);
  }
  const ops::PrecisionScope scope(core::DType::kBF16);
  EXPECT_EQ(host(true), cpu::GemmsRoundToBf16() ? core::DType::kBF16 : core::DType::kF32);
  EXPECT_EQ(host(false), core::DType::kF32);
  EXPECT_EQ(ops::ActivationStorageType(core::Device::kCuda), core::DType::kBF16);
  const ops::TypedActivationsScope off(false);
  EXPECT_EQ(host(true), core::DType::kF32);
}

// ResNet's convolutions: a padded 3x3, a strided 3x3, a pointwise one whose
// rows come in several chunks per thread, a strided pointwise one (the
// projection shortcut) and the stem's strided 7x7 over an fp32 image.
TEST_F(HostBf16Storage, ConvolutionsGiveTheValuesOfFp32Storage) {
  struct Case {
    ConvGeometry g;
    bool image;  // x is the fp32 input image; no input gradient
  };
  const Case cases[] = {{Conv2d(2, 8, 6, 6, 16, 3, 3, 1, 1), false},
                        {Conv2d(2, 16, 9, 9, 24, 3, 3, 2, 1), false},
                        {Conv2d(2, 16, 24, 24, 512, 1, 1, 1, 0), false},
                        {Conv2d(2, 32, 8, 8, 64, 1, 1, 2, 0), false},
                        {Conv2d(3, 3, 20, 20, 8, 7, 7, 2, 3), true}};
  for (const Case& c : cases) {
    const ConvGeometry& g = c.g;
    const int64_t k = g.out_channels;
    const core::Shape in{g.batch, g.in[1], g.in[2], g.in_channels};
    const core::Shape out{g.batch, g.out(1), g.out(2), k};
    const std::string name = "kernel " + std::to_string(g.kernel[1]) + " stride " +
                             std::to_string(g.stride[1]) + " k " + std::to_string(k);
    Buffer w({k, g.in_channels, g.kernel[1], g.kernel[2]}), image(in);
    FillRandom(w, 51);
    FillRandom(image, 52);
    Buffer ws({std::max<int64_t>(
        1, ops::ConvWorkspaceElements(g, core::Layout::kNHWC, core::Device::kCpu))});
    Stored x(in, 53), y(out), dy(out, 54), dx(in);
    const Tensor image_nhwc = image.t().Reshaped(in, core::Layout::kNHWC);

    ops::ConvForward(g, c.image ? image_nhwc : x.F32(), w.t(), y.F32(), ws.t());
    ops::ConvForward(g, c.image ? image_nhwc : x.Bf16(), w.t(), y.Bf16(), ws.t());
    EXPECT_SAME_VALUES(y, "forward, " << name);

    Buffer dw32(w.shape), dw16(w.shape);
    ops::ConvBackwardWeight(g, c.image ? image_nhwc : x.F32(), dy.F32(), dw32.t(), ws.t());
    ops::ConvBackwardWeight(g, c.image ? image_nhwc : x.Bf16(), dy.Bf16(), dw16.t(), ws.t());
    EXPECT_EQ(dw16.data, dw32.data) << "weight gradient, " << name;
    if (c.image) continue;
    ops::ConvBackwardData(g, dy.F32(), w.t(), dx.F32(), ws.t());
    ops::ConvBackwardData(g, dy.Bf16(), w.t(), dx.Bf16(), ws.t());
    EXPECT_SAME_VALUES(dx, "input gradient, " << name);
  }
}

// The training batch norm with the residual add and ReLU, and its backward
// with the next block's gradient branch added in its first pass: 64
// channels, and 24 (not a whole vector of either width).
TEST_F(HostBf16Storage, BatchNormGivesTheValuesOfFp32Storage) {
  for (const core::Shape shape : {core::Shape{4, 5, 5, 64}, core::Shape{2, 7, 7, 24}}) {
    const int64_t c = shape[3];
    for (const bool relu : {false, true}) {
      for (const bool add : {false, true}) {
        const std::string name = "channels " + std::to_string(c) + " relu " + std::to_string(relu) +
                                 " residual " + std::to_string(add);
        Buffer gamma({c}), beta({c});
        FillRandom(gamma, 61, 0.5f, 1.5f);
        FillRandom(beta, 62);
        Stored x(shape, 63, -2.0f, 3.0f), residual(shape, 64), y(shape);
        // Each storage's own copy of the statistics and the running ones.
        Buffer mean32({c}), inv32({c}), rm32({c}), rv32({c}, 1.0f);
        Buffer mean16({c}), inv16({c}), rm16({c}), rv16({c}, 1.0f);
        ops::BatchNormActForwardTraining({}, relu, x.F32(), add ? residual.F32() : Tensor(),
                                         gamma.t(), beta.t(), y.F32(), mean32.t(), inv32.t(),
                                         rm32.t(), rv32.t());
        ops::BatchNormActForwardTraining({}, relu, x.Bf16(), add ? residual.Bf16() : Tensor(),
                                         gamma.t(), beta.t(), y.Bf16(), mean16.t(), inv16.t(),
                                         rm16.t(), rv16.t());
        EXPECT_SAME_VALUES(y, "forward, " << name);
        EXPECT_EQ(mean16.data, mean32.data) << name;
        EXPECT_EQ(inv16.data, inv32.data) << name;
        EXPECT_EQ(rv16.data, rv32.data) << name;

        Stored dy(shape, 65), addend(shape, 66), dx(shape);
        Buffer dgamma32({c}), dbeta32({c}), dgamma16({c}), dbeta16({c});
        ops::BatchNormActBackward(relu, x.F32(), y.F32(), dy.F32(), gamma.t(), mean32.t(),
                                  inv32.t(), dx.F32(), dgamma32.t(), dbeta32.t(),
                                  add ? addend.F32() : Tensor());
        ops::BatchNormActBackward(relu, x.Bf16(), y.Bf16(), dy.Bf16(), gamma.t(), mean16.t(),
                                  inv16.t(), dx.Bf16(), dgamma16.t(), dbeta16.t(),
                                  add ? addend.Bf16() : Tensor());
        EXPECT_SAME_VALUES(dy, "dy + addend, masked, " << name);
        EXPECT_SAME_VALUES(dx, "backward, " << name);
        EXPECT_EQ(dgamma16.data, dgamma32.data) << name;
        EXPECT_EQ(dbeta16.data, dbeta32.data) << name;
      }
    }
  }
}

// The stem's max pooling (3x3, stride 2, padding 1) both ways, the global
// average pooling both ways, and the residual gradients' sum.
TEST_F(HostBf16Storage, PoolingAndSumsGiveTheValuesOfFp32Storage) {
  const ConvGeometry g = Conv2d(2, 64, 9, 9, 64, 3, 3, 2, 1);
  const core::Shape in{2, 9, 9, 64}, out{2, g.out(1), g.out(2), 64};
  Stored x(in, 71), y(out), dy(out, 72), dx(in);
  ops::MaxPoolForward(g, x.F32(), y.F32());
  ops::MaxPoolForward(g, x.Bf16(), y.Bf16());
  EXPECT_SAME_VALUES(y, "max pooling");
  ops::MaxPoolBackward(g, x.F32(), dy.F32(), dx.F32());
  ops::RoundStored(dx.F32());  // overlapping windows sum
  ops::MaxPoolBackward(g, x.Bf16(), dy.Bf16(), dx.Bf16());
  EXPECT_SAME_VALUES(dx, "max pooling backward");

  Buffer f32({2, 64}), f16({2, 64}), df({2, 64});
  FillRandom(df, 73);
  ops::GlobalAvgPoolForward(x.F32(), f32.t());
  ops::GlobalAvgPoolForward(x.Bf16(), f16.t());
  EXPECT_EQ(f16.data, f32.data);
  Stored dpool(in);
  ops::GlobalAvgPoolBackward(df.t(), dpool.F32());
  ops::RoundStored(dpool.F32());
  ops::GlobalAvgPoolBackward(df.t(), dpool.Bf16());
  EXPECT_SAME_VALUES(dpool, "global average pooling backward");

  Stored sum(in, 74), addend(in, 75);
  ops::AccumulateStored(addend.F32(), sum.F32());
  ops::AccumulateStored(addend.Bf16(), sum.Bf16());
  EXPECT_SAME_VALUES(sum, "accumulate");
}

// Inference's convolution with the batch norm in its pass: a padded 3x3,
// the stem from an fp32 image, and a pointwise convolution whose rows come
// in several chunks per thread; with and without the residual and the ReLU.
TEST_F(HostBf16Storage, FusedInferenceGivesTheValuesOfFp32Storage) {
  struct Case {
    ConvGeometry g;
    bool image;
  };
  const Case cases[] = {{Conv2d(2, 8, 6, 6, 16, 3, 3, 1, 1), false},
                        {Conv2d(3, 3, 20, 20, 8, 7, 7, 2, 3), true},
                        {Conv2d(2, 16, 24, 24, 512, 1, 1, 1, 0), false}};
  for (const Case& c : cases) {
    const ConvGeometry& g = c.g;
    const int64_t k = g.out_channels;
    const core::Shape in{g.batch, g.in[1], g.in[2], g.in_channels};
    const core::Shape out{g.batch, g.out(1), g.out(2), k};
    Buffer w({k, g.in_channels, g.kernel[1], g.kernel[2]}), image(in), gamma({k}), beta({k}),
        mean({k}), var({k});
    FillRandom(w, 81);
    FillRandom(image, 82);
    FillRandom(gamma, 83, 0.5f, 1.5f);
    FillRandom(beta, 84);
    FillRandom(mean, 85, -0.3f, 0.3f);
    FillRandom(var, 86, 0.5f, 2.0f);
    Buffer ws({std::max<int64_t>(
        1, ops::ConvWorkspaceElements(g, core::Layout::kNHWC, core::Device::kCpu))});
    const Tensor image_nhwc = image.t().Reshaped(in, core::Layout::kNHWC);
    Stored x(in, 87), residual(out, 88), z(out);
    for (const bool relu : {false, true}) {
      for (const bool add : {false, true}) {
        Stored y(out);
        ops::ConvBatchNormActForwardInference(g, c.image ? image_nhwc : x.F32(), w.t(), z.F32(),
                                              ws.t(), {}, relu, add ? residual.F32() : Tensor(),
                                              gamma.t(), beta.t(), mean.t(), var.t(), y.F32());
        ops::ConvBatchNormActForwardInference(g, c.image ? image_nhwc : x.Bf16(), w.t(), z.Bf16(),
                                              ws.t(), {}, relu, add ? residual.Bf16() : Tensor(),
                                              gamma.t(), beta.t(), mean.t(), var.t(), y.Bf16());
        EXPECT_SAME_VALUES(y, "relu " << relu << " residual " << add << " k " << k);
      }
    }
  }
}

core::Shape VolumeIn(const ConvGeometry& g) {
  return {g.batch, g.in[0], g.in[1], g.in[2], g.in_channels};
}
core::Shape VolumeOut(const ConvGeometry& g) {
  return {g.batch, g.out(0), g.out(1), g.out(2), g.out_channels};
}
Buffer Workspace(const ConvGeometry& g) {
  return Buffer({std::max<int64_t>(
      1, ops::ConvWorkspaceElements(g, core::Layout::kNDHWC, core::Device::kCpu))});
}

// The weight gradient's col goes into the AMX pair layout two rows at a
// time (cpu::nhwc::Im2ColPairs): against fp32 arithmetic on the same
// bf16-valued operands (exact products, sums in another order; the bf16
// gradient then rounded to bf16, so within one unit of it), from bf16
// and from fp32 x, over odd row counts, several chunks per thread, one input
// channel (27 columns), a stride of 2 and padding.
TEST_F(HostBf16Storage, WeightGradientFromPairedColMatchesFp32Arithmetic) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  for (const ConvGeometry& g :
       {Conv3d(1, 32, 13, 13, 13, 16, 3, 1, 1), Conv3d(1, 1, 9, 9, 9, 8, 3, 1, 1),
        Conv3d(1, 8, 9, 7, 8, 16, 3, 2, 1)}) {
    const std::string name =
        std::to_string(g.in_channels) + " channels, stride " + std::to_string(g.stride[0]);
    Buffer ws = Workspace(g), want({g.out_channels, g.in_channels, 3, 3, 3});
    Buffer from16(want.shape), from32(want.shape);
    Stored x(VolumeIn(g), 101), dy(VolumeOut(g), 102);
    ops::ConvBackwardWeight(g, x.Bf16(), dy.Bf16(), from16.t(), ws.t());
    ops::ConvBackwardWeight(g, x.F32(), dy.F32(), from32.t(), ws.t());
    {
      const ops::PrecisionScope fp32(core::DType::kF32);
      ASSERT_FALSE(cpu::GemmsRoundToBf16());
      ops::ConvBackwardWeight(g, x.F32(), dy.F32(), want.t(), ws.t());
    }
    int bad = 0;
    for (int64_t i = 0; i < want.size(); ++i) {
      const double tolerance = 1e-4 + 0x1p-8 * std::fabs(want.data[i]);
      if ((std::fabs(from16.data[i] - want.data[i]) > tolerance ||
           std::fabs(from32.data[i] - want.data[i]) > tolerance) &&
          ++bad <= 5)
        ADD_FAILURE() << name << " dw[" << i << "]: " << from16.data[i] << " (bf16 x), "
                      << from32.data[i] << " (fp32 x), fp32 arithmetic " << want.data[i];
    }
    EXPECT_EQ(bad, 0) << name;
  }
  omp_set_num_threads(threads);
}

// The 3D U-Net's convolutions on one volume and two threads: a 3x3x3 at
// stride 1 and one at stride 2 (whose data gradient adds depth slabs), the
// transposed 2^3 upsampling with its bias, and the pointwise output
// convolution from bf16 into fp32 logits and back.
TEST_F(HostBf16Storage, UNetConvolutionsGiveTheValuesOfFp32Storage) {
  const int threads = omp_get_max_threads();
  omp_set_num_threads(2);
  for (const ConvGeometry& g :
       {Conv3d(1, 32, 6, 5, 4, 32, 3, 1, 1), Conv3d(1, 32, 9, 6, 6, 64, 3, 2, 1)}) {
    const std::string name = "stride " + std::to_string(g.stride[0]);
    Buffer w({g.out_channels, g.in_channels, 3, 3, 3}), ws = Workspace(g);
    FillRandom(w, 91);
    Stored x(VolumeIn(g), 92), y(VolumeOut(g)), dy(VolumeOut(g), 93), dx(VolumeIn(g));
    ops::ConvForward(g, x.F32(), w.t(), y.F32(), ws.t());
    ops::ConvForward(g, x.Bf16(), w.t(), y.Bf16(), ws.t());
    EXPECT_SAME_VALUES(y, "forward, " << name);
    Buffer dw32(w.shape), dw16(w.shape);
    ops::ConvBackwardWeight(g, x.F32(), dy.F32(), dw32.t(), ws.t());
    ops::ConvBackwardWeight(g, x.Bf16(), dy.Bf16(), dw16.t(), ws.t());
    EXPECT_EQ(dw16.data, dw32.data) << "weight gradient, " << name;
    ops::ConvBackwardData(g, dy.F32(), w.t(), dx.F32(), ws.t());
    ops::ConvBackwardData(g, dy.Bf16(), w.t(), dx.Bf16(), ws.t());
    EXPECT_SAME_VALUES(dx, "input gradient, " << name);
  }

  // Upsampling: g's input is the transposed convolution's output.
  const ConvGeometry up = Conv3d(1, 32, 8, 6, 6, 64, 2, 2, 0);
  Buffer w({64, 32, 2, 2, 2}), bias({32}), ws = Workspace(up);
  FillRandom(w, 94);
  FillRandom(bias, 95);
  Stored x(VolumeOut(up), 96), y(VolumeIn(up)), dy(VolumeIn(up), 97), dx(VolumeOut(up));
  ops::ConvTransposeForward(up, x.F32(), w.t(), y.F32(), ws.t());
  ops::BiasAddChannels(bias.t(), y.F32());
  ops::ConvTransposeForward(up, x.Bf16(), w.t(), y.Bf16(), ws.t());
  ops::BiasAddChannels(bias.t(), y.Bf16());
  EXPECT_SAME_VALUES(y, "upsampling with its bias");
  Buffer db32({32}), db16({32}), dw32(w.shape), dw16(w.shape);
  ops::BiasBackwardChannels(dy.F32(), db32.t());
  ops::BiasBackwardChannels(dy.Bf16(), db16.t());
  EXPECT_EQ(db16.data, db32.data) << "bias gradient";
  ops::ConvTransposeBackwardWeight(up, x.F32(), dy.F32(), dw32.t(), ws.t());
  ops::ConvTransposeBackwardWeight(up, x.Bf16(), dy.Bf16(), dw16.t(), ws.t());
  EXPECT_EQ(dw16.data, dw32.data) << "upsampling weight gradient";
  ops::ConvTransposeBackwardData(up, dy.F32(), w.t(), dx.F32(), ws.t());
  ops::ConvTransposeBackwardData(up, dy.Bf16(), w.t(), dx.Bf16(), ws.t());
  EXPECT_SAME_VALUES(dx, "upsampling input gradient");

  const ConvGeometry head = Conv3d(1, 32, 4, 5, 6, 3, 1, 1, 0);
  Buffer hw({3, 32, 1, 1, 1}), hws = Workspace(head);
  FillRandom(hw, 98);
  Stored hx(VolumeIn(head), 99), hdx(VolumeIn(head));
  const core::Shape logits = VolumeOut(head);
  Buffer y32(logits), y16(logits), dlogits(logits), hdw32(hw.shape), hdw16(hw.shape);
  FillRandom(dlogits, 100);
  const auto ndhwc = [&](Buffer& b) { return b.t().Reshaped(logits, core::Layout::kNDHWC); };
  ops::ConvForward(head, hx.F32(), hw.t(), ndhwc(y32), hws.t());
  ops::ConvForward(head, hx.Bf16(), hw.t(), ndhwc(y16), hws.t());
  EXPECT_EQ(y16.data, y32.data) << "output convolution";
  ops::ConvBackwardWeight(head, hx.F32(), ndhwc(dlogits), hdw32.t(), hws.t());
  ops::ConvBackwardWeight(head, hx.Bf16(), ndhwc(dlogits), hdw16.t(), hws.t());
  EXPECT_EQ(hdw16.data, hdw32.data) << "output convolution weight gradient";
  ops::ConvBackwardData(head, ndhwc(dlogits), hw.t(), hdx.F32(), hws.t());
  ops::ConvBackwardData(head, ndhwc(dlogits), hw.t(), hdx.Bf16(), hws.t());
  EXPECT_SAME_VALUES(hdx, "output convolution input gradient");
  omp_set_num_threads(threads);
}

// Instance norm with its ReLU both ways (32 channels, and 24), and the
// skips' concatenation and split. The backward stores dx rounded where fp32
// storage leaves it as it is (the convolution's GEMMs that read it round it
// alike).
TEST_F(HostBf16Storage, InstanceNormAndConcatenationGiveTheValuesOfFp32Storage) {
  for (const core::Shape shape : {core::Shape{2, 4, 5, 6, 32}, core::Shape{1, 3, 4, 4, 24}}) {
    const int64_t n = shape[0], c = shape[4];
    const std::string name = "channels " + std::to_string(c);
    Buffer gamma({c}), beta({c}), mean32({n, c}), inv32({n, c}), mean16({n, c}), inv16({n, c});
    FillRandom(gamma, 101, 0.5f, 1.5f);
    FillRandom(beta, 102);
    Stored x(shape, 103, -2.0f, 3.0f), y(shape), dy(shape, 104), dx(shape);
    ops::InstanceNormReluForward(1e-5f, x.F32(), gamma.t(), beta.t(), y.F32(), mean32.t(),
                                 inv32.t());
    ops::InstanceNormReluForward(1e-5f, x.Bf16(), gamma.t(), beta.t(), y.Bf16(), mean16.t(),
                                 inv16.t());
    EXPECT_SAME_VALUES(y, "forward, " << name);
    EXPECT_EQ(mean16.data, mean32.data) << name;
    EXPECT_EQ(inv16.data, inv32.data) << name;
    Buffer dg32({c}), db32({c}), dg16({c}), db16({c});
    ops::InstanceNormReluBackward(x.F32(), y.F32(), dy.F32(), gamma.t(), mean32.t(), inv32.t(),
                                  dx.F32(), dg32.t(), db32.t());
    ops::InstanceNormReluBackward(x.Bf16(), y.Bf16(), dy.Bf16(), gamma.t(), mean16.t(), inv16.t(),
                                  dx.Bf16(), dg16.t(), db16.t());
    EXPECT_SAME_VALUES(dy, "dy masked, " << name);
    std::vector<float> rounded(dx.f32.size());
    for (size_t i = 0; i < rounded.size(); ++i) rounded[i] = cpu::RoundToBf16(dx.f32[i]);
    EXPECT_EQ(dx.Bf16Values(), rounded) << "backward, " << name;
    EXPECT_EQ(dg16.data, dg32.data) << name;
    EXPECT_EQ(db16.data, db32.data) << name;
  }
  const core::Shape a_shape{1, 3, 4, 5, 16}, b_shape{1, 3, 4, 5, 8}, y_shape{1, 3, 4, 5, 24};
  Stored a(a_shape, 105), b(b_shape, 106), y(y_shape), a2(a_shape), b2(b_shape);
  ops::ConcatChannels(a.F32(), b.F32(), y.F32());
  ops::ConcatChannels(a.Bf16(), b.Bf16(), y.Bf16());
  EXPECT_SAME_VALUES(y, "concatenation");
  ops::SplitChannels(y.F32(), a2.F32(), b2.F32());
  ops::SplitChannels(y.Bf16(), a2.Bf16(), b2.Bf16());
  EXPECT_SAME_VALUES(a2, "split, first part");
  EXPECT_SAME_VALUES(b2, "split, second part");
  EXPECT_EQ(a2.f32, a.f32);
}

}  // namespace
}  // namespace mlperf
