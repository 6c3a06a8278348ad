// The layers in reference/layers/ against central finite differences: a
// scalar loss sum(output * r) through linear + GELU, layer norm, embedding
// and self-attention (with a padding mask), with respect to the input and to
// parameters of every kind; and where conv + BN stores its values under
// mixed precision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/philox.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "reference/layers/attention.h"
#include "reference/layers/conv_norm.h"
#include "reference/layers/embedding.h"
#include "reference/layers/layer_norm.h"
#include "reference/layers/linear.h"

namespace mlperf::layers {
namespace {

using core::Tensor;

// Arenas sized by a measuring pass of `build`, kept for one test.
struct TestArenas {
  explicit TestArenas(const std::function<void(const ModelArenas&, ParameterRegistry*)>& build) {
    core::Arena p = core::Arena::Measuring(), g = core::Arena::Measuring();
    core::Arena b = core::Arena::Measuring(), a = core::Arena::Measuring();
    ParameterRegistry ignored;
    build({&p, &g, &b, &a}, &ignored);
    params.emplace_back(core::Device::kCpu, p.used());
    params.emplace_back(core::Device::kCpu, g.used());
    params.emplace_back(core::Device::kCpu, std::max<size_t>(b.used(), 1));
    params.emplace_back(core::Device::kCpu, a.used());
    build({&params[0], &params[1], &params[2], &params[3]}, &registry);
    // Small random parameters; normalisation scales around 1.
    for (size_t k = 0; k < registry.parameters.size(); ++k) {
      const Parameter& prm = registry.parameters[k];
      const float centre = prm.batch_norm && prm.name.ends_with(".weight") ? 1.0f : 0.0f;
      for (int64_t i = 0; i < prm.value.numel(); ++i)
        prm.value.f32()[i] = centre + 0.5f * (core::PhiloxUniform(3, k, i) - 0.5f);
    }
  }
  std::vector<core::Arena> params;
  ParameterRegistry registry;
};

void Randomize(const Tensor& t, uint64_t seed) {
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = core::PhiloxUniform(seed, 0, i) - 0.5f;
}

double Dot(const Tensor& a, const std::vector<float>& r) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += double{a.f32()[i]} * r[i];
  return s;
}

// Checks d loss / d value[i] for a few i against central differences, where
// loss() runs the forward pass and returns sum(output * r).
void ExpectGradient(const Tensor& value, const Tensor& grad, const std::function<double()>& loss,
                    const char* what) {
  for (int64_t i : {int64_t{0}, value.numel() / 3, value.numel() - 1}) {
    float& v = value.f32()[i];
    const float saved = v;
    const float h = 1e-2f;
    v = saved + h;
    const double up = loss();
    v = saved - h;
    const double down = loss();
    v = saved;
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(grad.f32()[i], numeric, 2e-3 + 2e-2 * std::fabs(numeric))
        << what << " [" << i << "]";
  }
}

TEST(LayersTest, SelfAttentionBlockMatchesFiniteDifferences) {
  const int64_t b = 2, t = 4, hidden = 8, heads = 2, rows = b * t;
  LayerNorm ln;
  SelfAttention attention;
  Linear ffn;
  Tensor x, mask, dx, dln, dattn, dy;
  TestArenas arenas([&](const ModelArenas& a, ParameterRegistry* r) {
    ln.Allocate(rows, hidden, 1e-5f, "ln", a, r);
    attention.Allocate(b, t, hidden, heads, "attn", a, r);
    ffn.Allocate(rows, hidden, hidden, Activation::kGelu, "ffn", a, r);
    x = a.activations->Allocate({rows, hidden});
    mask = a.activations->Allocate({b, t});
    dx = a.activations->Allocate({rows, hidden});
    dln = a.activations->Allocate({rows, hidden});
    dattn = a.activations->Allocate({rows, hidden});
    dy = a.activations->Allocate({rows, hidden});
  });
  Randomize(x, 1);
  for (int64_t i = 0; i < b * t; ++i) mask.f32()[i] = i == t - 1 ? 0.0f : 1.0f;  // one pad key
  std::vector<float> r(rows * hidden);
  for (size_t i = 0; i < r.size(); ++i) r[i] = core::PhiloxUniform(2, 0, i) - 0.5f;
  const auto forward = [&] {
    ln.Forward(x);
    attention.Forward(ln.output(), mask, {});
    ffn.Forward(attention.output());
    return Dot(ffn.output(), r);
  };
  forward();
  for (int64_t i = 0; i < dy.numel(); ++i) dy.f32()[i] = r[i];
  ffn.Backward(attention.output(), dy, dln);
  attention.Backward(ln.output(), dln, dattn);
  ln.Backward(x, dattn, dx);
  ExpectGradient(x, dx, forward, "x");
  for (const Parameter& p : arenas.registry.parameters)
    ExpectGradient(p.value, p.grad, forward, p.name.c_str());
}

TEST(LayersTest, EmbeddingGradientSumsRowsAtTheirIds) {
  Embedding embedding;
  Tensor ids;
  TestArenas arenas([&](const ModelArenas& a, ParameterRegistry* r) {
    embedding.Allocate(5, 4, 3, "emb", a, r);
    ids = a.activations->Allocate({5}, core::DType::kI32);
  });
  int32_t* id = static_cast<int32_t*>(ids.data());
  for (int32_t i : {0, 1, 2, 3, 4}) id[i] = i % 2 == 0 ? 2 : 1;  // rows 0 and 3 never used
  embedding.Forward(ids);
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 3; ++j)
      EXPECT_EQ(embedding.output().f32()[i * 3 + j], embedding.table().f32()[id[i] * 3 + j]);
  std::vector<float> dy(15, 1.0f);
  embedding.Backward(ids, Tensor(dy.data(), {5, 3}, core::DType::kF32));
  const Tensor& grad = arenas.registry.parameters[0].grad;
  EXPECT_EQ(grad.f32()[0], 0.0f);
  EXPECT_EQ(grad.f32()[1 * 3], 2.0f);  // ids 1 and 3 point at row 1
  EXPECT_EQ(grad.f32()[2 * 3], 3.0f);  // ids 0, 2 and 4 at row 2
  EXPECT_EQ(grad.f32()[3 * 3], 0.0f);
}

// Under bf16 a conv + BN unit with a residual stores the normalised value
// rounded, then the rounded sum (PyTorch's autocast, and cuDNN's BN followed
// by the add on a device storing bf16): bit for bit relu(round(round(BN(z))
// + residual)). Its backward stores dz rounded, and the conv rounds dx.
TEST(LayersTest, ConvBnUnderBf16RoundsBeforeAndAfterTheResidualAdd) {
  const ops::PrecisionScope scope(core::DType::kBF16);
  // fp32 storage, read here as floats (a host with AMX would store bf16, the
  // same values: host_bf16_storage_test).
  const ops::TypedActivationsScope fp32_storage(false);
  const core::Layout nhwc = core::Layout::kNHWC;
  const ConvGeometry g = Conv2dPadded(2, 4, 6, 6, 8, 3, 1, PaddingMode::kSymmetric);
  ConvBn unit, plain;  // plain: the same unit without residual or ReLU
  Tensor x, residual, reference_out, dy, dz, dx, workspace;
  TestArenas arenas([&](const ModelArenas& a, ParameterRegistry* r) {
    unit.Allocate(g, nhwc, true, "conv", "bn", a, r);
    plain.Allocate(g, nhwc, false, "plain_conv", "plain_bn", a, r);
    const core::Shape in = ActivationShape(nhwc, 2, 4, 6, 6),
                      out = ActivationShape(nhwc, 2, 8, 6, 6);
    x = a.activations->Allocate(in, core::DType::kF32, nhwc);
    residual = a.activations->Allocate(out, core::DType::kF32, nhwc);
    dy = a.activations->Allocate(out, core::DType::kF32, nhwc);
    dz = a.activations->Allocate(out, core::DType::kF32, nhwc);
    dx = a.activations->Allocate(in, core::DType::kF32, nhwc);
    workspace = a.activations->Allocate({std::max<int64_t>(unit.workspace_elements(), 1)});
  });
  const std::vector<Parameter>& p = arenas.registry.parameters;
  ASSERT_EQ(p.size(), 6u);
  for (size_t k = 0; k < 3; ++k)
    std::copy_n(p[k].value.f32(), p[k].value.numel(), p[k + 3].value.f32());
  Randomize(x, 4);
  Randomize(residual, 5);
  // Stored values: x and the residual come from earlier storage points.
  ops::RoundToPrecision(core::DType::kBF16, x, x);
  ops::RoundToPrecision(core::DType::kBF16, residual, residual);
  const BatchNormParams bn;
  unit.Forward(x, true, bn, workspace, residual);
  plain.Forward(x, true, bn, workspace);
  const auto bf16 = [](float v) { return core::Bf16ToFloat(core::FloatToBf16(v)); };
  int differs_from_fp32 = 0;
  for (int64_t i = 0; i < residual.numel(); ++i) {
    const float normalised = plain.output().f32()[i];
    ASSERT_EQ(normalised, bf16(normalised)) << i;
    const float want = std::max(bf16(normalised + residual.f32()[i]), 0.0f);
    ASSERT_EQ(unit.output().f32()[i], want) << i;
  }
  // The same values in fp32 differ: the rounding points matter.
  {
    const ops::PrecisionScope fp32(core::DType::kF32);
    plain.Forward(x, true, bn, workspace);
    for (int64_t i = 0; i < residual.numel(); ++i)
      differs_from_fp32 += unit.output().f32()[i] !=
                           std::max(bf16(plain.output().f32()[i] + residual.f32()[i]), 0.0f);
  }
  EXPECT_GT(differs_from_fp32, 0);

  Randomize(dy, 6);
  ops::RoundToPrecision(core::DType::kBF16, dy, dy);
  unit.Backward(x, dy, dz, dx, workspace);
  for (const Tensor* t : {&dz, &dx})
    for (int64_t i = 0; i < t->numel(); ++i) ASSERT_EQ(t->f32()[i], bf16(t->f32()[i])) << i;
}

}  // namespace
}  // namespace mlperf::layers
