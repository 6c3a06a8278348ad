// The detector's ops and loss against finite differences and their
// definitions: nearest resize (PyTorch's indices, its adjoint), the frozen
// batch norm's gradient, and the focal + L1 loss's gradient (two boxes
// matched among two levels' anchors).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "reference/detection/anchors.h"
#include "reference/detection/losses.h"
#include "reference/kernels/dispatch.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;

TEST(UpsampleNearest, ReadsPyTorchsSourcePixelsAndItsBackwardIsTheAdjoint) {
  // Doubling (7 -> 14 rows) and a ratio that is not whole (3 -> 7 columns):
  // source column floor(j * 3/7).
  Buffer x({2, 3, 7, 3}), y({2, 3, 14, 7}), dy({2, 3, 14, 7}), dx({2, 3, 7, 3});
  testing::FillRandom(x, 1);
  testing::FillRandom(dy, 2);
  ops::UpsampleNearest(x.t(), y.t());
  const int cols[7] = {0, 0, 0, 1, 1, 2, 2};
  for (int p = 0; p < 6; ++p)
    for (int i = 0; i < 14; ++i)
      for (int j = 0; j < 7; ++j)
        ASSERT_EQ(y[(p * 14 + i) * 7 + j], x[(p * 7 + i / 2) * 3 + cols[j]])
            << p << " " << i << " " << j;
  ops::UpsampleNearestBackward(dy.t(), dx.t());
  EXPECT_NEAR(testing::Dot(y, dy), testing::Dot(x, dx), 1e-4);
}

TEST(FrozenBatchNorm, BackwardMatchesFiniteDifferences) {
  Buffer x({2, 3, 4, 5}), y = x, r = x, dx = x, gamma({3}), beta({3}), mean({3}), var({3});
  testing::FillRandom(x, 3);
  testing::FillRandom(r, 4);
  testing::FillRandom(gamma, 5, 0.5f, 1.5f);
  testing::FillRandom(beta, 6);
  testing::FillRandom(mean, 7);
  testing::FillRandom(var, 8, 0.5f, 2.0f);
  auto loss = [&] {
    ops::BatchNormActForwardInference({.epsilon = 1e-5f}, false, x.t(), core::Tensor(), gamma.t(),
                                      beta.t(), mean.t(), var.t(), y.t());
    return testing::Dot(y, r);
  };
  ops::FrozenBatchNormBackward(r.t(), gamma.t(), var.t(), 1e-5f, dx.t());
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 2e-3, "frozen bn");
}

TEST(RetinaNetLoss, GradientMatchesFiniteDifferences) {
  // One image, two levels of 2 x 2 and 1 x 1 cells, 3 classes.
  const int64_t classes = 3, a = detection::kAnchorsPerCell;
  const std::vector<detection::FeatureSize> levels = {{2, 2}, {1, 1}};
  const std::vector<std::vector<int>> sizes = {{16, 20, 25}, {32, 40, 50}};
  const std::vector<detection::Box> anchors = detection::ImageAnchors(sizes, 32, 32, levels);
  Buffer cls0({a * classes, 2, 2}), cls1({a * classes, 1, 1}), reg0({a * 4, 2, 2}),
      reg1({a * 4, 1, 1});
  testing::FillRandom(cls0, 9, -3, 1);
  testing::FillRandom(cls1, 10, -3, 1);
  testing::FillRandom(reg0, 11);
  testing::FillRandom(reg1, 12);
  detection::ImageTargets targets;
  targets.boxes = {{2, 3, 18, 15}, {10, 8, 30, 31}};
  targets.labels = {2, 0};
  Buffer dcls0 = cls0, dcls1 = cls1, dreg0 = reg0, dreg1 = reg1;
  auto run = [&](bool keep_grads) {
    Buffer g0 = cls0, g1 = cls1, r0 = reg0, r1 = reg1;
    const std::vector<detection::LevelHead> heads = {
        {cls0.data.data(), reg0.data.data(), g0.data.data(), r0.data.data(), 2, 2},
        {cls1.data.data(), reg1.data.data(), g1.data.data(), r1.data.data(), 1, 1}};
    const detection::ImageLoss l =
        detection::RetinaNetImageLoss(heads, anchors, classes, targets, 0.5f);
    if (keep_grads) {
      dcls0 = g0, dcls1 = g1, dreg0 = r0, dreg1 = r1;
      EXPECT_GT(l.foreground, 0);
    }
    return 0.5 * (l.classification + l.regression);
  };
  run(true);
  testing::ExpectGradientMatches(
      cls0, dcls0.data, [&] { return run(false); }, 1e-2, 2e-3, "logits P3");
  testing::ExpectGradientMatches(
      cls1, dcls1.data, [&] { return run(false); }, 1e-2, 2e-3, "logits P4");
  // L1 has a kink at 0; the random offsets keep away from it.
  testing::ExpectGradientMatches(
      reg0, dreg0.data, [&] { return run(false); }, 1e-3, 2e-3, "boxes P3");
  testing::ExpectGradientMatches(
      reg1, dreg1.data, [&] { return run(false); }, 1e-3, 2e-3, "boxes P4");
}

}  // namespace
}  // namespace mlperf
