// Optimizer steps against numbers worked out by hand from the reference
// formulas, a few steps against a scalar transcription of those formulas,
// and the dynamic loss scaler (grow, back off, skipped step).
#include "reference/kernels/ops/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "reference/kernels/dispatch.h"

namespace mlperf {
namespace {

TEST(SgdTest, NesterovStepsByHand) {
  // w=1, g=0.5, momentum 0.9, lr 0.1 (3D U-Net uses Nesterov, wd 0):
  // step 1: buf = 0.5, w -= 0.1*(0.5 + 0.9*0.5) = 0.905
  // step 2: buf = 0.95, w -= 0.1*(0.5 + 0.9*0.95) = 0.7695
  float w = 1.0f, g = 0.5f, buf = 0.0f;
  const TensorSlice slice{0, 1, false};
  SgdParams p{.lr = 0.1f, .momentum = 0.9f, .weight_decay = 0.0f, .nesterov = true};
  ops::SgdStep(core::Device::kCpu, p, {&slice, 1}, &w, &g, &buf, nullptr);
  EXPECT_NEAR(w, 0.905f, 1e-6);
  ops::SgdStep(core::Device::kCpu, p, {&slice, 1}, &w, &g, &buf, nullptr);
  EXPECT_NEAR(buf, 0.95f, 1e-6);
  EXPECT_NEAR(w, 0.7695f, 1e-6);
  // Classic momentum with weight decay on the same numbers: d = 0.5 + 0.1*1.
  float w2 = 1.0f, buf2 = 0.0f;
  p.nesterov = false;
  p.weight_decay = 0.1f;
  ops::SgdStep(core::Device::kCpu, p, {&slice, 1}, &w2, &g, &buf2, nullptr);
  EXPECT_NEAR(w2, 1.0f - 0.1f * 0.6f, 1e-6);
}

TEST(LarsTest, FirstStepByHand) {
  // w=[3,4] (|w|=5), g=[0.6,0.8] (|g|=1), wd 0.01, eeta 0.001, lr 1, eps 0:
  // trust = 0.001*5/(1 + 0.05) ; g + wd*w = [0.63, 0.84] = 1.05*[0.6, 0.8]
  // so v = -[0.003, 0.004] and w = [2.997, 3.996].
  // The bias (excluded) b=0.5, g=0.2: v = -0.2, b = 0.3.
  std::vector<float> w = {3.0f, 4.0f, 0.5f}, g = {0.6f, 0.8f, 0.2f}, v(3, 0.0f);
  const TensorSlice slices[] = {{0, 2, false}, {2, 1, true, true}};
  LarsParams p{
      .lr = 1.0f, .momentum = 0.9f, .weight_decay = 0.01f, .eeta = 0.001f, .epsilon = 0.0f};
  ops::LarsStep(core::Device::kCpu, p, slices, w.data(), g.data(), v.data(), nullptr);
  EXPECT_NEAR(v[0], -0.003f, 1e-7);
  EXPECT_NEAR(v[1], -0.004f, 1e-7);
  EXPECT_NEAR(w[0], 2.997f, 1e-6);
  EXPECT_NEAR(w[1], 3.996f, 1e-6);
  EXPECT_NEAR(w[2], 0.3f, 1e-6);
  // Second step: the momentum carries lr*trust of the first step (TF-style).
  ops::LarsStep(core::Device::kCpu, p, slices, w.data(), g.data(), v.data(), nullptr);
  const double norm_w = 5.0 * 0.999, trust = 0.001 * norm_w / (1.0 + 0.01 * norm_w);
  EXPECT_NEAR(v[0], 0.9 * -0.003 - trust * (0.6 + 0.01 * 2.997), 1e-7);
  EXPECT_NEAR(v[2], 0.9 * -0.2 - 0.2, 1e-6);
  EXPECT_NEAR(w[2], 0.3 - 0.38, 1e-6);
}

TEST(LarsTest, ZeroWeightsUseTrustOne) {
  std::vector<float> w = {0.0f, 0.0f}, g = {1.0f, -1.0f}, v(2, 0.0f);
  const TensorSlice slice{0, 2, false};
  ops::LarsStep(core::Device::kCpu, {.lr = 0.5f, .momentum = 0.9f, .weight_decay = 0.1f},
                {&slice, 1}, w.data(), g.data(), v.data(), nullptr);
  EXPECT_FLOAT_EQ(w[0], -0.5f);
  EXPECT_FLOAT_EQ(w[1], 0.5f);
}

// Scalar double transcription of lamb_optimizer_v1.py plus clip_by_global_norm.
struct LambReference {
  std::vector<double> w, m, v;
  int t = 0;
  void Step(const LambParams& p, const std::vector<float>& g_in, int64_t split) {
    ++t;
    double gn = 0;
    for (float x : g_in) gn += static_cast<double>(x) * x;
    gn = std::sqrt(gn);
    const double clip = gn > p.max_grad_norm ? p.max_grad_norm / gn : 1.0;
    auto update = [&](size_t lo, size_t hi, bool excluded) {
      std::vector<double> u(hi - lo);
      double wn = 0, un = 0;
      for (size_t i = lo; i < hi; ++i) {
        const double g = g_in[i] * clip;
        m[i] = p.beta1 * m[i] + (1 - p.beta1) * g;
        v[i] = p.beta2 * v[i] + (1 - p.beta2) * g * g;
        const double mh = m[i] / (1 - std::pow(p.beta1, t));
        const double vh = v[i] / (1 - std::pow(p.beta2, t));
        u[i - lo] = mh / (std::sqrt(vh) + p.epsilon) + (excluded ? 0.0 : p.weight_decay * w[i]);
        wn += w[i] * w[i];
        un += u[i - lo] * u[i - lo];
      }
      const double r = (!excluded && wn > 0 && un > 0) ? std::sqrt(wn) / std::sqrt(un) : 1.0;
      for (size_t i = lo; i < hi; ++i) w[i] -= p.lr * r * u[i - lo];
    };
    update(0, split, false);
    update(split, w.size(), true);
  }
};

TEST(LambTest, ThreeStepsMatchTheReferenceFormulas) {
  std::vector<float> w = {0.5f, -1.0f, 2.0f, 0.25f, 0.1f}, m(5, 0.0f), v(5, 0.0f);
  LambReference ref{{0.5, -1.0, 2.0, 0.25, 0.1}, std::vector<double>(5), std::vector<double>(5)};
  const TensorSlice slices[] = {{0, 3, false}, {3, 2, true, true}};  // weight, then a LayerNorm
  const LambParams p{.lr = 0.01f,
                     .beta1 = 0.9f,
                     .beta2 = 0.999f,
                     .epsilon = 1e-6f,
                     .weight_decay = 0.01f,
                     .max_grad_norm = 1.0f};
  int32_t step = 0;
  // The second gradient has global norm > 1, so it is clipped.
  const std::vector<std::vector<float>> grads = {{0.1f, -0.2f, 0.05f, 0.3f, -0.1f},
                                                 {2.0f, 1.0f, -2.0f, 0.5f, 0.0f},
                                                 {-0.1f, 0.0f, 0.4f, 0.2f, 0.2f}};
  for (const auto& g : grads) {
    ops::LambStep(core::Device::kCpu, p, slices, w.data(), g.data(), m.data(), v.data(), &step,
                  nullptr);
    ref.Step(p, g, 3);
    for (int i = 0; i < 5; ++i) ASSERT_NEAR(w[i], ref.w[i], 1e-6) << "step " << step << " i " << i;
  }
  EXPECT_EQ(step, 3);
}

TEST(LambTest, FirstStepByHand) {
  // Step 1 with bias correction: m_hat = g, v_hat = g^2, so u = g/(|g| + eps)
  // + wd*w ~ sign(g) + wd*w. w = [3, 4], g = [0.6, 0.8], wd = 0.01:
  // u ~ [1.03, 1.04]; ratio |w|/|u| = 5/|u|; w -= lr*ratio*u.
  std::vector<float> w = {3.0f, 4.0f}, g = {0.6f, 0.8f}, m(2, 0.0f), v(2, 0.0f);
  const TensorSlice slice{0, 2, false};
  int32_t step = 0;
  ops::LambStep(core::Device::kCpu, {.lr = 0.1f, .epsilon = 0.0f, .weight_decay = 0.01f},
                {&slice, 1}, w.data(), g.data(), m.data(), v.data(), &step, nullptr);
  const double un = std::sqrt(1.03 * 1.03 + 1.04 * 1.04);
  EXPECT_NEAR(w[0], 3.0 - 0.1 * 5.0 / un * 1.03, 1e-6);
  EXPECT_NEAR(w[1], 4.0 - 0.1 * 5.0 / un * 1.04, 1e-6);
}

// Adam / AdamW against the textbook formulas in double, three steps: the
// decay decoupled from the moments (AdamW) or added to the gradient (Adam),
// none on a no_weight_decay slice, and the trust-ratio flag ignored.
TEST(AdamTest, ThreeStepsMatchTheFormulas) {
  for (const bool decoupled : {true, false}) {
    std::vector<float> w = {0.5f, -1.0f, 2.0f, 0.25f, 0.1f}, m(5, 0.0f), v(5, 0.0f);
    std::vector<double> rw(w.begin(), w.end()), rm(5, 0.0), rv(5, 0.0);
    // A weight (its trust-ratio flag means nothing to Adam), then a bias.
    const TensorSlice slices[] = {{0, 3, false, true}, {3, 2, true, true}};
    const AdamParams p{.lr = 0.01f,
                       .beta1 = 0.9f,
                       .beta2 = 0.95f,
                       .epsilon = 1e-8f,
                       .weight_decay = 0.1f,
                       .decoupled = decoupled};
    int32_t step = 0;
    const std::vector<std::vector<float>> grads = {{0.1f, -0.2f, 0.05f, 0.3f, -0.1f},
                                                   {2.0f, 1.0f, -2.0f, 0.5f, 0.0f},
                                                   {-0.1f, 0.0f, 0.4f, 0.2f, 0.2f}};
    for (int t = 1; t <= 3; ++t) {
      const std::vector<float>& g = grads[t - 1];
      ops::AdamStep(core::Device::kCpu, p, slices, w.data(), g.data(), m.data(), v.data(), &step,
                    nullptr);
      for (int i = 0; i < 5; ++i) {
        const double wd = i < 3 ? 0.1 : 0.0;
        const double gi = g[i] + (decoupled ? 0.0 : wd * rw[i]);
        rm[i] = 0.9 * rm[i] + 0.1 * gi;
        rv[i] = 0.95 * rv[i] + 0.05 * gi * gi;
        const double mh = rm[i] / (1 - std::pow(0.9, t)), vh = rv[i] / (1 - std::pow(0.95, t));
        rw[i] -= 0.01 * (mh / (std::sqrt(vh) + 1e-8) + (decoupled ? wd * rw[i] : 0.0));
        ASSERT_NEAR(w[i], rw[i], 2e-6)
            << (decoupled ? "AdamW" : "Adam") << " step " << t << " i " << i;
      }
    }
    EXPECT_EQ(step, 3);
  }
}

// lr_at: the rate read from memory when the step runs (a recorded CUDA
// graph's steps) gives the very same update as the rate passed by value.
TEST(OptimizerRateTest, RateReadFromMemoryEqualsTheRatePassed) {
  const std::vector<TensorSlice> slices = {{0, 5, false}, {5, 3, true, true}};
  std::vector<float> g(8);
  for (size_t i = 0; i < g.size(); ++i) g[i] = 0.1f * static_cast<float>(i) - 0.35f;
  const std::vector<float> start = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 0.1f, 0.2f, -0.3f};
  for (int which = 0; which < 4; ++which) {
    const float rate = 0.37f;
    std::vector<float> w_value = start, w_memory = start;
    std::vector<float> m_value(8, 0.0f), m_memory(8, 0.0f), v_value(8, 0.0f), v_memory(8, 0.0f);
    int32_t t_value = 0, t_memory = 0;
    for (int step = 0; step < 2; ++step) {
      if (which == 0) {
        ops::SgdStep(core::Device::kCpu, {.lr = rate, .momentum = 0.9f, .weight_decay = 0.01f},
                     slices, w_value.data(), g.data(), m_value.data(), nullptr);
        ops::SgdStep(core::Device::kCpu,
                     {.lr = 99.0f, .lr_at = &rate, .momentum = 0.9f, .weight_decay = 0.01f}, slices,
                     w_memory.data(), g.data(), m_memory.data(), nullptr);
      } else if (which == 1) {
        ops::LarsStep(core::Device::kCpu, {.lr = rate, .weight_decay = 0.01f}, slices,
                      w_value.data(), g.data(), m_value.data(), nullptr);
        ops::LarsStep(core::Device::kCpu, {.lr = 99.0f, .lr_at = &rate, .weight_decay = 0.01f},
                      slices, w_memory.data(), g.data(), m_memory.data(), nullptr);
      } else if (which == 2) {
        ops::LambStep(core::Device::kCpu, {.lr = rate}, slices, w_value.data(), g.data(),
                      m_value.data(), v_value.data(), &t_value, nullptr);
        ops::LambStep(core::Device::kCpu, {.lr = 99.0f, .lr_at = &rate}, slices, w_memory.data(),
                      g.data(), m_memory.data(), v_memory.data(), &t_memory, nullptr);
      } else {
        ops::AdamStep(core::Device::kCpu, {.lr = rate, .weight_decay = 0.01f}, slices,
                      w_value.data(), g.data(), m_value.data(), v_value.data(), &t_value, nullptr);
        ops::AdamStep(core::Device::kCpu, {.lr = 99.0f, .lr_at = &rate, .weight_decay = 0.01f},
                      slices, w_memory.data(), g.data(), m_memory.data(), v_memory.data(),
                      &t_memory, nullptr);
      }
    }
    EXPECT_NE(w_value, start) << which;
    EXPECT_EQ(w_memory, w_value) << which;
    EXPECT_EQ(m_memory, m_value) << which;
  }
}

TEST(LossScalerTest, BacksOffOnOverflowSkipsTheStepAndGrowsAfterTheInterval) {
  const LossScaleParams p{.growth_factor = 2.0f, .backoff_factor = 0.5f, .growth_interval = 3};
  float scale = 1024.0f, found_inf = 0.0f;
  int32_t tracker = 0;
  std::vector<float> g = {512.0f, std::numeric_limits<float>::infinity()};
  ops::UnscaleAndCheckFinite(core::Device::kCpu, g.data(), 2, &scale, &found_inf);
  EXPECT_EQ(found_inf, 1.0f);
  // The optimizer reads the flag and leaves everything untouched.
  float w = 1.0f, buf = 0.25f;
  const TensorSlice slice{0, 1, false};
  ops::SgdStep(core::Device::kCpu, {.lr = 0.1f}, {&slice, 1}, &w, g.data(), &buf, &found_inf);
  EXPECT_EQ(w, 1.0f);
  EXPECT_EQ(buf, 0.25f);
  float m = 0.0f, v = 0.0f;
  int32_t step = 5;
  ops::LambStep(core::Device::kCpu, {.lr = 0.1f}, {&slice, 1}, &w, g.data(), &m, &v, &step,
                &found_inf);
  EXPECT_EQ(step, 5);
  EXPECT_EQ(w, 1.0f);
  ops::AdamStep(core::Device::kCpu, {.lr = 0.1f}, {&slice, 1}, &w, g.data(), &m, &v, &step,
                &found_inf);
  EXPECT_EQ(step, 5);
  EXPECT_EQ(w, 1.0f);
  ops::UpdateLossScale(core::Device::kCpu, p, &scale, &tracker, &found_inf);
  EXPECT_EQ(scale, 512.0f);
  EXPECT_EQ(tracker, 0);
  // Three clean steps grow the scale once.
  for (int i = 0; i < 3; ++i) {
    g = {256.0f, -128.0f};
    ops::UnscaleAndCheckFinite(core::Device::kCpu, g.data(), 2, &scale, &found_inf);
    EXPECT_EQ(found_inf, 0.0f);
    EXPECT_EQ(g[0], 0.5f);
    EXPECT_EQ(g[1], -0.25f);
    ops::UpdateLossScale(core::Device::kCpu, p, &scale, &tracker, &found_inf);
    EXPECT_EQ(scale, i < 2 ? 512.0f : 1024.0f);
  }
  EXPECT_EQ(tracker, 0);
  g = {std::numeric_limits<float>::quiet_NaN(), 1.0f};
  ops::UnscaleAndCheckFinite(core::Device::kCpu, g.data(), 2, &scale, &found_inf);
  EXPECT_EQ(found_inf, 1.0f);
}

}  // namespace
}  // namespace mlperf
