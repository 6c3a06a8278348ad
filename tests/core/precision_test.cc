// Mixed precision (reference/kernels/precision.h): the rounding itself, the
// scope, and every GEMM-class op under bf16 and fp16. Each op must equal its
// fp32 self on inputs rounded first, with the outputs rounded after (the
// rounding points, exactly), leave its inputs alone, and stay within the
// precision's tolerance of plain fp32.
#include "reference/kernels/precision.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "base/environment.h"
#include "reference/core/dtype.h"
#include "reference/core/philox.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/dispatch.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::DType;
using testing::Buffer;

float RoundScalar(DType precision, float v) {
  return precision == DType::kBF16 ? core::Bf16ToFloat(core::FloatToBf16(v))
                                   : core::HalfToFloat(core::FloatToHalf(v));
}

std::vector<float> Rounded(DType precision, std::vector<float> v) {
  for (float& x : v) x = RoundScalar(precision, x);
  return v;
}

bool SameBits(float a, float b) { return core::FloatBits(a) == core::FloatBits(b); }

// Largest |a - b| over the largest |b|.
double ScaledMaxError(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0.0, scale = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(static_cast<double>(b[i])));
  }
  return err / scale;
}

TEST(PrecisionTest, RoundToPrecisionIsTheConversionAndBackBitForBit) {
  // Random values over fp16's whole range and beyond, then special ones:
  // ties, fp16's subnormals and their boundary, its largest value, overflow.
  Buffer x({4096});
  for (int64_t i = 0; i < x.size(); ++i)
    x[i] = std::ldexp(core::PhiloxUniform(7, 0, static_cast<uint64_t>(i)) - 0.5f,
                      static_cast<int>(i % 50) - 30);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f + 0x1p-8f,
                            1.0f + 0x1p-11f,
                            0x1.002p0f,
                            0x1.006p0f,
                            65504.0f,
                            65519.0f,
                            65520.0f,
                            -65520.0f,
                            1e-8f,
                            3e38f,
                            0x1p-133f,
                            0x1p-25f,
                            -0x1p-26f,
                            0x3p-25f,
                            0x5p-25f,
                            0x1p-14f,
                            0x1.ffcp-15f,
                            0x1.ffep-15f,
                            -1e-30f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (size_t i = 0; i < std::size(specials); ++i) x[static_cast<int64_t>(i)] = specials[i];
  for (DType precision : {DType::kBF16, DType::kF16}) {
    Buffer y(x.shape);
    ops::RoundToPrecision(precision, x.t(), y.t());
    for (int64_t i = 0; i < x.size(); ++i) {
      const float expected = RoundScalar(precision, x[i]);
      ASSERT_TRUE(SameBits(y[i], expected) || (std::isnan(y[i]) && std::isnan(expected)))
          << ops::PrecisionName(precision) << " " << x[i] << " -> " << y[i];
    }
    Buffer in_place = x;
    ops::RoundToPrecision(precision, in_place.t(), in_place.t());
    for (int64_t i = 0; i < x.size(); ++i)
      ASSERT_TRUE(SameBits(in_place[i], y[i]) || std::isnan(y[i]));
  }
  // fp16 overflows to Inf where bf16 keeps the magnitude.
  Buffer big({1}, 70000.0f), out({1});
  ops::RoundToPrecision(DType::kF16, big.t(), out.t());
  EXPECT_TRUE(std::isinf(out[0]));
  ops::RoundToPrecision(DType::kBF16, big.t(), out.t());
  EXPECT_EQ(out[0], 70144.0f);
}

// A CUDA device stores activations in bf16/fp16 by default; the variable or
// a scope asks for fp32 storage; the CPU always stores fp32, rounded in place.
TEST(PrecisionTest, ActivationsAreStoredInThePrecisionOnCudaByDefault) {
  if (base::GetEnv("MLPERF_TYPED_ACTIVATIONS") != nullptr)
    GTEST_SKIP() << "MLPERF_TYPED_ACTIVATIONS overrides the default";
  EXPECT_TRUE(ops::TypedActivations());
  const ops::PrecisionScope bf16(DType::kBF16);
  EXPECT_EQ(ops::ActivationStorageType(core::Device::kCuda), DType::kBF16);
  EXPECT_EQ(ops::ActivationStorageType(core::Device::kCpu), DType::kF32);
  {
    const ops::TypedActivationsScope fp32_storage(false);
    EXPECT_EQ(ops::ActivationStorageType(core::Device::kCuda), DType::kF32);
  }
  // The environment is read once, at first use (kernels/switches.h), and
  // recorded in the system description (closed_cli_test has a run with
  // switches set): setting it now changes nothing.
  ASSERT_EQ(setenv("MLPERF_TYPED_ACTIVATIONS", "0", 1), 0);
  EXPECT_EQ(ops::ActivationStorageType(core::Device::kCuda), DType::kBF16);
  ASSERT_EQ(unsetenv("MLPERF_TYPED_ACTIVATIONS"), 0);
  const ops::PrecisionScope fp32(DType::kF32);
  EXPECT_EQ(ops::ActivationStorageType(core::Device::kCuda), DType::kF32);
}

TEST(PrecisionTest, ScopeSetsAndRestores) {
  EXPECT_EQ(ops::ComputePrecision(), DType::kF32);
  {
    const ops::PrecisionScope bf16(DType::kBF16);
    EXPECT_EQ(ops::ComputePrecision(), DType::kBF16);
    {
      const ops::PrecisionScope fp16(DType::kF16);
      EXPECT_EQ(ops::ComputePrecision(), DType::kF16);
    }
    EXPECT_EQ(ops::ComputePrecision(), DType::kBF16);
  }
  EXPECT_EQ(ops::ComputePrecision(), DType::kF32);
  EXPECT_EQ(ops::PrecisionName(DType::kBF16), "bf16");
  EXPECT_EQ(ops::PrecisionName(DType::kF16), "fp16");
}

// One GEMM-class op as the test drives it: `inputs` are read, `outputs`
// written; run() calls the op on them.
struct OpCase {
  std::string name;
  std::vector<Buffer*> inputs, outputs;
  std::function<void()> run;
};

// Runs `op` three ways and checks the rounding points and the tolerance.
void CheckRoundingPoints(const OpCase& op, DType precision, double tolerance) {
  const std::string what = op.name + " " + std::string(ops::PrecisionName(precision));
  std::vector<std::vector<float>> originals;
  for (Buffer* b : op.inputs) originals.push_back(b->data);

  op.run();  // fp32
  std::vector<std::vector<float>> fp32;
  for (Buffer* b : op.outputs) fp32.push_back(b->data);

  // fp32 on rounded inputs, outputs rounded after: what the precision must give.
  for (size_t i = 0; i < op.inputs.size(); ++i)
    op.inputs[i]->data = Rounded(precision, originals[i]);
  op.run();
  std::vector<std::vector<float>> expected;
  for (Buffer* b : op.outputs) expected.push_back(Rounded(precision, b->data));
  for (size_t i = 0; i < op.inputs.size(); ++i) op.inputs[i]->data = originals[i];

  {
    const ops::PrecisionScope scope(precision);
    op.run();
  }
  for (size_t i = 0; i < op.inputs.size(); ++i)
    ASSERT_EQ(op.inputs[i]->data, originals[i]) << what << ": input " << i << " changed";
  for (size_t o = 0; o < op.outputs.size(); ++o) {
    const std::vector<float>& got = op.outputs[o]->data;
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_TRUE(SameBits(got[i], expected[o][i]))
          << what << ": output " << o << " element " << i << " is " << got[i] << ", expected "
          << expected[o][i];
    const double err = ScaledMaxError(got, fp32[o]);
    EXPECT_LE(err, tolerance) << what << ": output " << o;
    EXPECT_GT(err, 0.0) << what << ": output " << o << " was not rounded at all";
  }
}

// Per-precision tolerance on the largest error over the largest value:
// the inputs' and output's rounding (8 and 11 significant bits) summed over
// short dot products.
double Tolerance(DType precision) { return precision == DType::kBF16 ? 2e-2 : 3e-3; }

std::vector<OpCase> GemmClassOps(std::vector<std::unique_ptr<Buffer>>& keep) {
  const auto buffer = [&](core::Shape s, uint64_t seed) {
    keep.push_back(std::make_unique<Buffer>(s));
    testing::FillRandom(*keep.back(), seed);
    return keep.back().get();
  };
  std::vector<OpCase> cases;
  // Linear: x [6, 20] -> y [6, 12].
  Buffer *x = buffer({6, 20}, 1), *w = buffer({12, 20}, 2), *b = buffer({12}, 3);
  Buffer *y = buffer({6, 12}, 0), *dy = buffer({6, 12}, 4);
  Buffer *dx = buffer({6, 20}, 0), *dw = buffer({12, 20}, 0), *db = buffer({12}, 0);
  cases.push_back({"LinearForward", {x, w, b}, {y}, [=] {
                     ops::LinearForward(x->t(), w->t(), b->t(), y->t());
                   }});
  cases.push_back({"LinearBackward", {x, w, dy}, {dx, dw, db}, [=] {
                     ops::LinearBackward(x->t(), w->t(), dy->t(), dx->t(), dw->t(), db->t());
                   }});
  // Convolution: 2 x 3 x 7 x 6 -> 4 filters of 3x3, stride 1, pad 1.
  const ConvGeometry g = Conv2d(2, 3, 7, 6, 4, 3, 3, 1, 1);
  Buffer* cx = buffer({g.batch, g.in_channels, g.in[1], g.in[2]}, 5);
  Buffer* cw = buffer({g.out_channels, g.in_channels, g.kernel[1], g.kernel[2]}, 6);
  Buffer* cy = buffer({g.batch, g.out_channels, g.out(1), g.out(2)}, 0);
  Buffer* cdy = buffer({g.batch, g.out_channels, g.out(1), g.out(2)}, 7);
  Buffer* cdx = buffer(cx->shape, 0);
  Buffer* cdw = buffer(cw->shape, 0);
  Buffer* ws =
      buffer({ops::ConvWorkspaceElements(g, core::Layout::kNCHW, core::Device::kCpu) + 1}, 0);
  cases.push_back({"ConvForward", {cx, cw}, {cy}, [=] {
                     ops::ConvForward(g, cx->t(), cw->t(), cy->t(), ws->t());
                   }});
  cases.push_back({"ConvBackwardData", {cdy, cw}, {cdx}, [=] {
                     ops::ConvBackwardData(g, cdy->t(), cw->t(), cdx->t(), ws->t());
                   }});
  cases.push_back({"ConvBackwardWeight", {cx, cdy}, {cdw}, [=] {
                     ops::ConvBackwardWeight(g, cx->t(), cdy->t(), cdw->t(), ws->t());
                   }});
  // A convolution's bias gradient sums dy as its convolution's output
  // gradient was stored: rounded already, so values both precisions hold.
  Buffer* sdy = buffer(cdy->shape, 0);
  for (int64_t i = 0; i < sdy->size(); ++i)
    (*sdy)[i] = std::ldexp(std::round(cdy->data[i] * 127.0f), -static_cast<int>(i % 13));
  Buffer* cdb = buffer({g.out_channels}, 0);
  cases.push_back({"BiasBackwardChannels", {sdy}, {cdb}, [=] {
                     ops::BiasBackwardChannels(sdy->t(), cdb->t());
                   }});
  // Batched GEMM: 3 products of a [5 x 8] and the transpose of a [4 x 8].
  Buffer *a = buffer({3, 5, 8}, 8), *bt = buffer({3, 4, 8}, 9), *c = buffer({3, 5, 4}, 0);
  cases.push_back({"GemmStridedBatched", {a, bt}, {c}, [=] {
                     ops::GemmStridedBatched(core::Device::kCpu, false, true, 5, 4, 8, 0.5f,
                                             a->data.data(), 40, bt->data.data(), 32, 0.0f,
                                             c->data.data(), 20, 3);
                   }});
  return cases;
}

TEST(PrecisionTest, GemmClassOpsRoundAtExactlyTheRoundingPoints) {
  for (DType precision : {DType::kBF16, DType::kF16}) {
    std::vector<std::unique_ptr<Buffer>> keep;
    for (const OpCase& op : GemmClassOps(keep))
      CheckRoundingPoints(op, precision, Tolerance(precision));
  }
}

// A convolution's bias (added to its rounded output): the output plus the
// rounded bias, rounded again, in either layout.
TEST(PrecisionTest, ConvolutionBiasIsAddedRoundedAndTheSumRounded) {
  const int64_t n = 2, c = 5, h = 3, w = 4;
  Buffer y0({n, c, h, w}), bias({c});
  testing::FillRandom(y0, 21, -4.0f, 4.0f);
  testing::FillRandom(bias, 22);
  for (DType precision : {DType::kBF16, DType::kF16}) {
    for (core::Layout layout : {core::Layout::kNCHW, core::Layout::kNHWC}) {
      const bool last = layout == core::Layout::kNHWC;
      const core::Shape shape = last ? core::Shape{n, h, w, c} : core::Shape{n, c, h, w};
      std::vector<float> y = y0.data, plain = y0.data;
      {
        const ops::PrecisionScope scope(precision);
        ops::BiasAddChannels(
            bias.t(), core::Tensor(y.data(), shape, DType::kF32, core::Device::kCpu, layout));
      }
      ops::BiasAddChannels(
          bias.t(), core::Tensor(plain.data(), shape, DType::kF32, core::Device::kCpu, layout));
      for (int64_t i = 0; i < y0.size(); ++i) {
        const int64_t channel = last ? i % c : (i / (h * w)) % c;
        const float expected =
            RoundScalar(precision, y0[i] + RoundScalar(precision, bias[channel]));
        ASSERT_TRUE(SameBits(y[i], expected)) << ops::PrecisionName(precision) << " element " << i
                                              << ": " << y[i] << " against " << expected;
      }
      EXPECT_NE(y, plain);  // so the check above could fail
    }
  }
}

TEST(PrecisionTest, OtherOpsStayFp32UnderAReducedPrecision) {
  // Pointwise and normalisation ops read and write fp32 whatever the scope.
  Buffer x({64}), y32({64}), y16({64});
  testing::FillRandom(x, 11, -3.0f, 3.0f);
  ops::GeluForward(x.t(), y32.t());
  {
    const ops::PrecisionScope scope(DType::kBF16);
    ops::GeluForward(x.t(), y16.t());
  }
  EXPECT_EQ(y16.data, y32.data);
  EXPECT_NE(Rounded(DType::kBF16, y32.data), y32.data);  // so the check above could fail
}

TEST(PrecisionTest, Fp16OverflowsToInfinityInTheOutput) {
  // 20 products of 100 x 100 sum to 200,000, beyond fp16's 65,504.
  Buffer x({1, 20}, 100.0f), w({1, 20}, 100.0f), y({1, 1});
  const ops::PrecisionScope scope(DType::kF16);
  ops::LinearForward(x.t(), w.t(), core::Tensor(), y.t());
  EXPECT_TRUE(std::isinf(y[0]));
}

}  // namespace
}  // namespace mlperf
