// The FP8 linear layers on the CPU (kernels/ops/fp8.h): the casts against
// core/fp8.h's conversions bit for bit (which match ml_dtypes, fp8_test),
// the three GEMMs against their definitions on the cast operands in double,
// the scaling update against core::DelayedScaling, and a layer under
// --precision fp8 against the same layer in fp32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/dtype.h"
#include "reference/core/fp8.h"
#include "reference/core/philox.h"
#include "reference/kernels/cpu/round.h"
#include "reference/kernels/ops/fp8.h"
#include "reference/kernels/precision.h"
#include "reference/layers/linear.h"

namespace mlperf {
namespace {

using core::DType;
using core::Tensor;

std::vector<float> Normal(int64_t n, uint64_t seed, float scale) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double u1 = (static_cast<double>(core::PhiloxBits(seed, 0, 2 * i) >> 11) + 1) * 0x1p-53;
    const double u2 = static_cast<double>(core::PhiloxBits(seed, 0, 2 * i + 1) >> 11) * 0x1p-53;
    v[static_cast<size_t>(i)] =
        static_cast<float>(scale * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307 * u2));
  }
  return v;
}

Tensor View(std::vector<float>& v, core::Shape shape) {
  return Tensor(v.data(), shape, DType::kF32);
}

// A state with the given scales (inverses exact in fp32: powers of two
// would hide a descale applied the wrong way round, so they are not).
std::vector<float> State(float sx, float sw, float sg) {
  std::vector<float> s(ops::kFp8StateFloats, 0.0f);
  const float scales[3] = {sx, sw, sg};
  for (int r = 0; r < 3; ++r) {
    s[ops::kFp8ScaleAt + r] = scales[r];
    s[ops::kFp8ScaleInverseAt + r] = 1.0f / scales[r];
  }
  return s;
}

double Cast(float v, float scale, bool e5m2) {
  return e5m2 ? core::E5m2ToFloat(core::FloatToE5m2(v * scale, true))
              : core::E4m3ToFloat(core::FloatToE4m3(v * scale, true));
}

TEST(Fp8Rounding, BranchFreeRoundingIsTheConversionAndBack) {
  // Every high half with the low bits at the rounding boundaries, as
  // fp8_test walks them; NaN must stay NaN.
  for (uint32_t hi = 0; hi < (1u << 16); ++hi) {
    for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      const float x = core::BitsToFloat(hi << 16 | lo);
      const float e4 = core::E4m3ToFloat(core::FloatToE4m3(x, true));
      const float e5 = core::E5m2ToFloat(core::FloatToE5m2(x, true));
      if (std::isnan(x)) {
        ASSERT_TRUE(std::isnan(cpu::RoundToE4m3Saturated(x)));
        ASSERT_TRUE(std::isnan(cpu::RoundToE5m2Saturated(x)));
        continue;
      }
      ASSERT_EQ(core::FloatBits(cpu::RoundToE4m3Saturated(x)), core::FloatBits(e4)) << x;
      ASSERT_EQ(core::FloatBits(cpu::RoundToE5m2Saturated(x)), core::FloatBits(e5)) << x;
    }
  }
}

TEST(Fp8Quantize, CodesAndValuesAreTheScaledCastsAndTheAmaxIsRaised) {
  const int64_t rows = 7, cols = 13;
  std::vector<float> x = Normal(rows * cols, 1, 3.0f);
  x[5] = 1e9f;  // saturates
  x[6] = -1e-9f;
  std::vector<float> state = State(37.0f, 1.0f, 1000.0f);
  state[ops::kFp8AmaxAt + ops::kFp8GradOutput] = 2e9f;  // already above: stays
  for (const int role : {ops::kFp8Input, ops::kFp8GradOutput}) {
    const bool e5m2 = role == ops::kFp8GradOutput;
    const float scale = state[ops::kFp8ScaleAt + role];
    for (const bool transpose : {false, true}) {
      std::vector<uint8_t> codes(x.size());
      std::vector<float> values(x.size());
      ops::Fp8Quantize(View(x, {rows, cols}), View(state, {ops::kFp8StateFloats}), role, transpose,
                       Tensor(codes.data(), {rows, cols}, DType::kU8));
      ops::Fp8Quantize(View(x, {rows, cols}), View(state, {ops::kFp8StateFloats}), role, transpose,
                       View(values, {rows, cols}));
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          const float v = x[static_cast<size_t>(r * cols + c)];
          const size_t at = static_cast<size_t>(transpose ? c * rows + r : r * cols + c);
          const uint8_t code =
              e5m2 ? core::FloatToE5m2(v * scale, true) : core::FloatToE4m3(v * scale, true);
          ASSERT_EQ(codes[at], code) << r << "," << c;
          ASSERT_EQ(values[at], Cast(v, scale, e5m2)) << r << "," << c;
        }
      }
    }
  }
  EXPECT_EQ(state[ops::kFp8AmaxAt + ops::kFp8Input], 1e9f);
  EXPECT_EQ(state[ops::kFp8AmaxAt + ops::kFp8GradOutput], 2e9f);
  EXPECT_EQ(state[ops::kFp8AmaxAt + ops::kFp8Weight], 0.0f);
}

// |got - want| within a few bf16 steps of the row's magnitude: the products
// of FP8 values are exact, so only the fp32 summation order and the final
// rounding to bf16 part the kernel from the definition in double.
void ExpectClose(const std::vector<float>& got, const std::vector<double>& want, double scale,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i], cpu::RoundToBf16(got[i])) << what << " not rounded to bf16 at " << i;
    ASSERT_NEAR(got[i], want[i], std::abs(want[i]) * 0x1p-8 + scale * 1e-6) << what << " " << i;
  }
}

TEST(Fp8Linear, TheThreeGemmsAreTheirDefinitionsOnTheCastOperands) {
  const int64_t rows = 12, in = 40, out = 24;
  std::vector<float> x = Normal(rows * in, 2, 2.0f), w = Normal(out * in, 3, 0.05f);
  std::vector<float> b = Normal(out, 4, 0.5f), dy = Normal(rows * out, 5, 1e-3f);
  std::vector<float> state = State(60.0f, 3000.0f, 9e6f);
  std::vector<float> y(rows * out), dx(rows * in), dw(out * in), db(out);
  const Tensor s = View(state, {ops::kFp8StateFloats});
  ops::Fp8LinearForward(View(x, {rows, in}), View(w, {out, in}), View(b, {out}),
                        View(y, {rows, out}), s);
  ops::Fp8LinearBackward(View(x, {rows, in}), View(w, {out, in}), View(dy, {rows, out}),
                         View(dx, {rows, in}), View(dw, {out, in}), View(db, {out}), s);
  const float sx = state[0], sw = state[1], sg = state[2];
  std::vector<double> ry(y.size()), rdx(dx.size()), rdw(dw.size()), rdb(db.size());
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      double acc = 0.0;
      for (int64_t i = 0; i < in; ++i)
        acc += Cast(x[r * in + i], sx, false) * Cast(w[o * in + i], sw, false);
      ry[r * out + o] =
          acc / (static_cast<double>(sx) * sw) + cpu::RoundToBf16(b[static_cast<size_t>(o)]);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < in; ++i) {
      double acc = 0.0;
      for (int64_t o = 0; o < out; ++o)
        acc += Cast(dy[r * out + o], sg, true) * Cast(w[o * in + i], sw, false);
      rdx[r * in + i] = acc / (static_cast<double>(sg) * sw);
    }
  }
  for (int64_t o = 0; o < out; ++o) {
    for (int64_t i = 0; i < in; ++i) {
      double acc = 0.0;
      for (int64_t r = 0; r < rows; ++r)
        acc += Cast(dy[r * out + o], sg, true) * Cast(x[r * in + i], sx, false);
      rdw[o * in + i] = acc / (static_cast<double>(sg) * sx);
    }
    double sum = 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += dy[r * out + o];
    rdb[o] = sum;
  }
  ExpectClose(y, ry, 1.0, "y");
  ExpectClose(dx, rdx, 1e-4, "dx");
  ExpectClose(dw, rdw, 1e-3, "dw");
  ExpectClose(db, rdb, 1e-3, "dbias");
  // The casts raised each amax to its tensor's largest |value|.
  const auto largest = [](const std::vector<float>& v) {
    float m = 0.0f;
    for (float e : v) m = std::max(m, std::fabs(e));
    return m;
  };
  EXPECT_EQ(state[ops::kFp8AmaxAt + 0], largest(x));
  EXPECT_EQ(state[ops::kFp8AmaxAt + 1], largest(w));
  EXPECT_EQ(state[ops::kFp8AmaxAt + 2], largest(dy));
}

TEST(Fp8Scaling, UpdatesFollowDelayedScalingOverRanks) {
  std::vector<float> state(ops::kFp8StateFloats);
  ops::ResetFp8Scaling(View(state, {ops::kFp8StateFloats}));
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(state[ops::kFp8ScaleAt + r], 1.0f);
    EXPECT_EQ(state[ops::kFp8ScaleInverseAt + r], 1.0f);
  }
  core::DelayedScaling oracle[3] = {{core::kE4m3Max, ops::kFp8History},
                                    {core::kE4m3Max, ops::kFp8History},
                                    {core::kE5m2Max, ops::kFp8History}};
  const int kRanks = 3;
  std::vector<float> gathered(kRanks * 2 * 3);  // a stride wider than the three amaxes
  // Long enough for the history to wrap; a zero step, a spike that leaves
  // after kFp8History steps, and an infinite amax that freezes the scale.
  for (int step = 0; step < ops::kFp8History + 40; ++step) {
    for (int role = 0; role < 3; ++role) {
      float most = 0.0f;
      for (int r = 0; r < kRanks; ++r) {
        const double u =
            static_cast<double>(core::PhiloxBits(7, role, step * kRanks + r) >> 11) * 0x1p-53;
        float a = static_cast<float>(std::ldexp(1.0 + u, (step % 37) - 20 - role));
        if (step == 3) a = 0.0f;
        if (step == 5 && r == 1) a = 1e6f;
        if (step == ops::kFp8History + 20 && role == 2 && r == 0)
          a = std::numeric_limits<float>::infinity();
        gathered[static_cast<size_t>(r * 6 + role)] = a;
        most = std::max(most, a);
      }
      oracle[role].Record(most);
    }
    ops::Fp8UpdateScaling(View(state, {ops::kFp8StateFloats}), gathered.data(), 6, kRanks);
    for (int role = 0; role < 3; ++role) {
      ASSERT_EQ(state[ops::kFp8ScaleAt + role], oracle[role].scale()) << step << " " << role;
      ASSERT_EQ(state[ops::kFp8ScaleInverseAt + role], 1.0f / oracle[role].scale());
      ASSERT_EQ(state[ops::kFp8AmaxAt + role], 0.0f);
    }
  }
}

// A whole layer under --precision fp8 (Linear::Allocate's fp8) next to the
// same layer in fp32: close (FP8's 3 mantissa bits), not equal, and its
// state a registered buffer whose scales the update moves.
TEST(Fp8Linear, ALayerUnderFp8StaysNearFp32) {
  const int64_t rows = 32, in = 64, out = 48;
  std::vector<float> x = Normal(rows * in, 8, 1.0f), dy = Normal(rows * out, 9, 1e-2f);
  const auto run = [&](bool fp8, std::vector<float>* y, std::vector<float>* dx) {
    const ops::PrecisionScope precision(fp8 ? DType::kBF16 : DType::kF32, fp8);
    core::Arena params(core::Device::kCpu, 1 << 20), grads(core::Device::kCpu, 1 << 20),
        buffers(core::Device::kCpu, 1 << 20), acts(core::Device::kCpu, 1 << 20);
    layers::ParameterRegistry registry;
    layers::Linear linear;
    linear.Allocate(rows, in, out, layers::Activation::kNone, "dense",
                    {&params, &grads, &buffers, &acts}, &registry, DType::kF32, true,
                    ops::Fp8Linears());
    std::vector<float> w = Normal(out * in, 10, 0.1f);
    std::copy(w.begin(), w.end(), registry.parameters[0].value.f32());
    std::fill_n(registry.parameters[1].value.f32(), out, 0.25f);
    EXPECT_EQ(registry.fp8_scaling.size(), fp8 ? 1u : 0u);
    EXPECT_EQ(registry.buffers.size(), fp8 ? 1u : 0u);
    if (fp8) {
      EXPECT_EQ(registry.buffers[0].name, "dense.fp8_scaling");
      // A first step at scale 1, then one at the scales the amaxes gave.
      std::vector<float> xs = x;
      linear.Forward(View(xs, {rows, in}));
      const Tensor& s = registry.fp8_scaling[0];
      ops::Fp8UpdateScaling(s, s.f32() + ops::kFp8AmaxAt, 0, 1);
      EXPECT_GT(s.f32()[ops::kFp8ScaleAt + ops::kFp8Input], 1.0f);
    }
    linear.Forward(View(x, {rows, in}));
    std::vector<float> d = dy;
    dx->resize(rows * in);
    linear.Backward(View(x, {rows, in}), View(d, {rows, out}), View(*dx, {rows, in}));
    const Tensor& o = linear.output();
    y->assign(o.f32(), o.f32() + o.numel());
  };
  std::vector<float> y32, dx32, y8, dx8;
  run(false, &y32, &dx32);
  run(true, &y8, &dx8);
  double err = 0.0, norm = 0.0, derr = 0.0, dnorm = 0.0;
  for (size_t i = 0; i < y32.size(); ++i) {
    err += (y8[i] - y32[i]) * (y8[i] - y32[i]);
    norm += y32[i] * y32[i];
  }
  for (size_t i = 0; i < dx32.size(); ++i) {
    derr += (dx8[i] - dx32[i]) * (dx8[i] - dx32[i]);
    dnorm += dx32[i] * dx32[i];
  }
  // E4M3 rounds by up to 2^-4 relative, E5M2 by 2^-3; errors average out.
  EXPECT_LT(std::sqrt(err / norm), 0.05);
  EXPECT_GT(std::sqrt(err / norm), 1e-4);  // it did run in FP8
  EXPECT_LT(std::sqrt(derr / dnorm), 0.1);
}

}  // namespace
}  // namespace mlperf
