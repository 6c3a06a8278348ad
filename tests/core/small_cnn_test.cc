// End to end: a small CNN (conv-BN-ReLU-maxpool-conv-BN-ReLU-GAP-linear, the
// ResNet ops) trained with LARS and label-smoothed cross-entropy on generated
// images of oriented bars reaches the stated accuracy on held-out samples.
// Parameters, gradients and activations live in arenas sized before training;
// the training loop allocates nothing.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/init.h"
#include "reference/core/philox.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/optimizer.h"
#include "reference/kernels/ops/pool.h"
#include "reference/optim/schedules.h"

namespace mlperf {
namespace {

using core::Arena;
using core::Tensor;

constexpr int64_t kBatch = 32, kSize = 12, kClasses = 4, kC1 = 8, kC2 = 16;
constexpr double kTargetAccuracy = 0.95;

// Class k is a bar at angle k*45 degrees through a random point, plus noise:
// learnable only by looking at local orientation, which is what convs do.
void MakeImage(uint64_t seed, uint64_t index, float* image, int32_t* label) {
  const int32_t cls = static_cast<int32_t>(core::PhiloxBits(seed, index, 0) % kClasses);
  const int64_t cy = 3 + core::PhiloxBits(seed, index, 1) % (kSize - 6);
  const int64_t cx = 3 + core::PhiloxBits(seed, index, 2) % (kSize - 6);
  const int dy[] = {0, 1, 1, 1}, dx[] = {1, 1, 0, -1};
  for (int64_t i = 0; i < kSize * kSize; ++i)
    image[i] = 0.3f * (core::PhiloxUniform(seed, index, 16 + i) - 0.5f);
  for (int t = -3; t <= 3; ++t) {
    const int64_t y = cy + t * dy[cls], x = cx + t * dx[cls];
    if (y >= 0 && y < kSize && x >= 0 && x < kSize) image[y * kSize + x] += 1.0f;
  }
  *label = cls;
}

struct Net {
  ConvGeometry conv1 = Conv2d(kBatch, 1, kSize, kSize, kC1, 3, 3, 1, 1);
  ConvGeometry pool = Conv2d(kBatch, kC1, kSize, kSize, kC1, 2, 2, 2, 0);
  ConvGeometry conv2 = Conv2d(kBatch, kC1, kSize / 2, kSize / 2, kC2, 3, 3, 1, 1);
  // Parameters in forward order (and gradients with the same layout).
  Tensor w1, g1, b1, w2, g2, b2, fc_w, fc_b;
  Tensor dw1, dg1, db1, dw2, dg2, db2, dfc_w, dfc_b;
  Tensor rm1, rv1, rm2, rv2;
  // Activations and scratch.
  Tensor x, c1, a1, mean1, istd1, p1, c2, a2, mean2, istd2, feat, logits, loss, labels;
  Tensor dlogits, dfeat, da2, dc2, dp1, da1, dc1, workspace;

  void Allocate(Arena& params, Arena& grads, Arena& acts) {
    const core::Shape shapes[] = {{kC1, 1, 3, 3}, {kC1}, {kC1},           {kC2, kC1, 3, 3},
                                  {kC2},          {kC2}, {kClasses, kC2}, {kClasses}};
    Tensor* p[] = {&w1, &g1, &b1, &w2, &g2, &b2, &fc_w, &fc_b};
    Tensor* g[] = {&dw1, &dg1, &db1, &dw2, &dg2, &db2, &dfc_w, &dfc_b};
    for (int i = 0; i < 8; ++i) {
      *p[i] = params.Allocate(shapes[i]);
      *g[i] = grads.Allocate(shapes[i]);
    }
    rm1 = acts.Allocate({kC1});
    rv1 = acts.Allocate({kC1});
    rm2 = acts.Allocate({kC2});
    rv2 = acts.Allocate({kC2});
    x = acts.Allocate({kBatch, 1, kSize, kSize});
    c1 = acts.Allocate({kBatch, kC1, kSize, kSize});
    a1 = acts.Allocate(c1.shape());
    da1 = acts.Allocate(c1.shape());
    dc1 = acts.Allocate(c1.shape());
    mean1 = acts.Allocate({kC1});
    istd1 = acts.Allocate({kC1});
    p1 = acts.Allocate({kBatch, kC1, kSize / 2, kSize / 2});
    dp1 = acts.Allocate(p1.shape());
    c2 = acts.Allocate({kBatch, kC2, kSize / 2, kSize / 2});
    a2 = acts.Allocate(c2.shape());
    da2 = acts.Allocate(c2.shape());
    dc2 = acts.Allocate(c2.shape());
    mean2 = acts.Allocate({kC2});
    istd2 = acts.Allocate({kC2});
    feat = acts.Allocate({kBatch, kC2});
    dfeat = acts.Allocate(feat.shape());
    logits = acts.Allocate({kBatch, kClasses});
    dlogits = acts.Allocate(logits.shape());
    loss = acts.Allocate({1});
    labels = acts.Allocate({kBatch}, core::DType::kI32);
    workspace = acts.Allocate(
        {std::max(cpu::ConvWorkspaceElements(conv1), cpu::ConvWorkspaceElements(conv2))});
  }

  void Init() {
    // ResNet reference: he_normal (truncated) convs, BN gamma 1 / beta 0,
    // FC N(0, 0.01) with zero bias.
    core::HeNormalTruncated(w1, 9, {.seed = 5, .offset = 0});
    core::HeNormalTruncated(w2, 9 * kC1, {.seed = 5, .offset = 1});
    core::FillNormal(fc_w, 0.0f, 0.01f, {.seed = 5, .offset = 2});
    for (Tensor t : {g1, g2, rv1, rv2}) core::FillConstant(t, 1.0f);
    for (Tensor t : {b1, b2, fc_b, rm1, rm2}) core::FillConstant(t, 0.0f);
  }

  void Forward(bool training) {
    const cpu::BatchNormParams bn{.epsilon = 1e-5f, .momentum = 0.1f};
    cpu::ConvForward(conv1, x, w1, c1, workspace);
    if (training) {
      cpu::BatchNormForwardTraining(bn, c1, g1, b1, a1, mean1, istd1, rm1, rv1);
    } else {
      cpu::BatchNormForwardInference(bn, c1, g1, b1, rm1, rv1, a1);
    }
    ops::ReluForward(a1, a1);
    ops::MaxPoolForward(pool, a1, p1);
    cpu::ConvForward(conv2, p1, w2, c2, workspace);
    if (training) {
      cpu::BatchNormForwardTraining(bn, c2, g2, b2, a2, mean2, istd2, rm2, rv2);
    } else {
      cpu::BatchNormForwardInference(bn, c2, g2, b2, rm2, rv2, a2);
    }
    ops::ReluForward(a2, a2);
    ops::GlobalAvgPoolForward(a2, feat);
    cpu::LinearForward(feat, fc_w, fc_b, logits);
  }

  void Backward() {
    ops::SoftmaxCrossEntropy(0.1f, static_cast<float>(kBatch), logits, labels, loss, dlogits);
    cpu::LinearBackward(feat, fc_w, dlogits, dfeat, dfc_w, dfc_b);
    ops::GlobalAvgPoolBackward(dfeat, da2);
    ops::ReluBackward(a2, da2, da2);
    cpu::BatchNormBackward(c2, da2, g2, mean2, istd2, dc2, dg2, db2);
    cpu::ConvBackwardData(conv2, dc2, w2, dp1, workspace);
    cpu::ConvBackwardWeight(conv2, p1, dc2, dw2, workspace);
    ops::MaxPoolBackward(pool, a1, dp1, da1);
    ops::ReluBackward(a1, da1, da1);
    cpu::BatchNormBackward(c1, da1, g1, mean1, istd1, dc1, dg1, db1);
    cpu::ConvBackwardWeight(conv1, x, dc1, dw1, workspace);
  }

  void LoadBatch(uint64_t seed, uint64_t first) {
    for (int64_t i = 0; i < kBatch; ++i)
      MakeImage(seed, first + i, x.f32() + i * kSize * kSize, labels.as<int32_t>() + i);
  }
};

TEST(SmallCnnTest, LearnsOrientedBarsWithLars) {
  const auto start = std::chrono::steady_clock::now();
  Net net;
  Arena measure_p = Arena::Measuring(), measure_g = Arena::Measuring();
  Arena measure_a = Arena::Measuring();
  net.Allocate(measure_p, measure_g, measure_a);
  Arena params(core::Device::kCpu, measure_p.used()), grads(core::Device::kCpu, measure_g.used());
  Arena acts(core::Device::kCpu, measure_a.used());
  net.Allocate(params, grads, acts);
  net.Init();
  const int64_t flat = static_cast<int64_t>(params.used() / sizeof(float));
  std::vector<float> momentum(flat, 0.0f);
  // LARS skip list: BN gamma/beta and the FC bias.
  std::vector<TensorSlice> slices;
  const Tensor order[] = {net.w1, net.g1, net.b1, net.w2, net.g2, net.b2, net.fc_w, net.fc_b};
  const bool excluded[] = {false, true, true, false, true, true, false, true};
  for (int i = 0; i < 8; ++i)
    slices.push_back({order[i].f32() - net.w1.f32(), order[i].numel(), excluded[i], excluded[i]});

  const int64_t steps = 400;
  const optim::PolynomialWithWarmup schedule(
      {.base_lr = 2.0, .end_lr = 1e-4, .warmup_steps = 20, .train_steps = steps, .power = 2.0});
  double first_loss = 0.0, last_loss = 0.0;
  for (int64_t step = 0; step < steps; ++step) {
    net.LoadBatch(/*seed=*/1, static_cast<uint64_t>(step * kBatch));
    net.Forward(true);
    net.Backward();
    if (step == 0) first_loss = net.loss.f32()[0];
    last_loss = net.loss.f32()[0];
    ops::LarsStep(
        core::Device::kCpu,
        {.lr = static_cast<float>(schedule.At(step + 1)), .momentum = 0.9f, .weight_decay = 5e-5f},
        slices, net.w1.f32(), net.dw1.f32(), momentum.data(), nullptr);
  }
  // Held-out samples from another seed, BN in inference mode.
  int correct = 0, total = 0;
  for (int64_t b = 0; b < 16; ++b) {
    net.LoadBatch(/*seed=*/2, static_cast<uint64_t>(b * kBatch));
    net.Forward(false);
    for (int64_t i = 0; i < kBatch; ++i) {
      const float* z = net.logits.f32() + i * kClasses;
      const int64_t guess = std::max_element(z, z + kClasses) - z;
      correct += guess == net.labels.as<int32_t>()[i];
      ++total;
    }
  }
  const double accuracy = static_cast<double>(correct) / total;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("small CNN: loss %.3f -> %.3f, held-out accuracy %.3f, %.1f s\n", first_loss,
              last_loss, accuracy, seconds);
  EXPECT_LT(last_loss, first_loss);
  EXPECT_GE(accuracy, kTargetAccuracy);
  EXPECT_LT(seconds, 60.0);
}

}  // namespace
}  // namespace mlperf
