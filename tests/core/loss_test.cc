// Losses: values against closed forms, gradients against central differences;
// the evaluation argmax.
#include "reference/kernels/cpu/loss.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "reference/kernels/dispatch.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;
using testing::IntBuffer;

TEST(SoftmaxCrossEntropyTest, ValueWithLabelSmoothing) {
  Buffer logits({1, 3}), loss({1}), grad({1, 3});
  logits.data = {1.0f, 2.0f, 0.0f};
  IntBuffer labels({1});
  labels.data = {1};
  ops::SoftmaxCrossEntropy(0.1f, 1.0f, logits.t(), labels.t(), loss.t(), grad.t());
  const double lse = std::log(std::exp(1.0) + std::exp(2.0) + 1.0);
  // Target (0.1/3, 0.9 + 0.1/3, 0.1/3).
  const double expected =
      (0.1 / 3) * (lse - 1.0) + (0.9 + 0.1 / 3) * (lse - 2.0) + (0.1 / 3) * (lse - 0.0);
  EXPECT_NEAR(loss[0], expected, 1e-6);
  EXPECT_NEAR(grad[1], std::exp(2.0 - lse) - (0.9 + 0.1 / 3), 1e-6);
}

TEST(SoftmaxCrossEntropyTest, GradientMatchesAndIsDividedByTheNormalizer) {
  Buffer logits({4, 5}), loss({1}), grad({4, 5});
  IntBuffer labels({4});
  labels.data = {0, 4, 2, 2};
  testing::FillRandom(logits, 1, -3.0f, 3.0f);
  // The ResNet reference divides the summed loss by the global batch size,
  // which on one of several ranks is larger than the local batch.
  const float global_batch = 8.0f;
  auto value = [&] {
    Buffer scratch({4, 5});
    ops::SoftmaxCrossEntropy(0.1f, global_batch, logits.t(), labels.t(), loss.t(), scratch.t());
    return static_cast<double>(loss[0]);
  };
  ops::SoftmaxCrossEntropy(0.1f, global_batch, logits.t(), labels.t(), loss.t(), grad.t());
  testing::ExpectGradientMatches(logits, grad.data, value, 1e-2, 2e-3, "softmax xent");
}

TEST(DiceCrossEntropyTest, ConfidentCorrectPredictionHasZeroLoss) {
  // Logits so confident that softmax is one-hot: dice -> 1, CE -> 0.
  const int64_t n = 1, c = 3, s = 4;
  Buffer logits({n, c, s}, -50.0f), loss({1}), grad({n, c, s});
  Buffer ws({cpu::DiceCrossEntropyWorkspaceElements(n, c, s)});
  IntBuffer labels({n, s});
  labels.data = {0, 1, 2, 1};
  for (int q = 0; q < s; ++q) logits[labels.data[q] * s + q] = 50.0f;
  ops::DiceCrossEntropy(logits.t(), labels.t(), loss.t(), grad.t(), ws.t());
  EXPECT_NEAR(loss[0], 0.0, 1e-6);
}

TEST(DiceCrossEntropyTest, ValueByHandAndGradient) {
  const int64_t n = 2, c = 3, s = 5;
  Buffer logits({n, c, s}), loss({1}), grad({n, c, s});
  Buffer ws({cpu::DiceCrossEntropyWorkspaceElements(n, c, s)});
  IntBuffer labels({n, s});
  labels.data = {0, 1, 2, 1, 0, 2, 2, 0, 1, 0};
  testing::FillRandom(logits, 2, -2.0f, 2.0f);
  ops::DiceCrossEntropy(logits.t(), labels.t(), loss.t(), grad.t(), ws.t());
  // Recompute by the reference formula.
  double ce = 0.0, dice = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double inter[3] = {0, 0, 0}, sum_p[3] = {0, 0, 0}, sum_t[3] = {0, 0, 0};
    for (int64_t q = 0; q < s; ++q) {
      double z[3], m = -1e30, se = 0;
      for (int j = 0; j < 3; ++j) m = std::max(m, z[j] = logits[(i * c + j) * s + q]);
      for (int j = 0; j < 3; ++j) se += std::exp(z[j] - m);
      const int label = labels.data[i * s + q];
      ce += -(z[label] - m - std::log(se));
      for (int j = 0; j < 3; ++j) {
        const double p = std::exp(z[j] - m) / se;
        inter[j] += p * (j == label);
        sum_p[j] += p;
        sum_t[j] += (j == label);
      }
    }
    for (int j = 1; j < 3; ++j) dice += (2 * inter[j] + 1e-6) / (sum_t[j] + sum_p[j] + 1e-6);
  }
  const double expected = 0.5 * (1.0 - dice / (n * (c - 1))) + 0.5 * ce / (n * s);
  EXPECT_NEAR(loss[0], expected, 1e-6);
  auto value = [&] {
    Buffer scratch({n, c, s});
    ops::DiceCrossEntropy(logits.t(), labels.t(), loss.t(), scratch.t(), ws.t());
    return static_cast<double>(loss[0]);
  };
  testing::ExpectGradientMatches(logits, grad.data, value, 1e-2, 2e-3, "dice ce");
}

// Channels-last logits [n, S, c]: the same loss, and the same gradient in
// their layout, as channels-first on the transposed logits.
TEST(DiceCrossEntropyTest, ChannelsLastMatchesChannelsFirst) {
  const int64_t n = 2, c = 3, d = 4, h = 5, w = 6, s = d * h * w;
  Buffer logits({n, c, d, h, w}), grad({n, c, d, h, w}), loss({1});
  Buffer last({n, d, h, w, c}), grad_last({n, d, h, w, c}), loss_last({1});
  Buffer ws({cpu::DiceCrossEntropyWorkspaceElements(n, c, s)});
  IntBuffer labels({n, d, h, w});
  testing::FillRandom(logits, 7, -3.0f, 3.0f);
  for (int64_t v = 0; v < n * s; ++v) labels.data[v] = static_cast<int32_t>((v * 7 + v / 5) % c);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t q = 0; q < s; ++q) last[(i * s + q) * c + j] = logits[(i * c + j) * s + q];
  ops::DiceCrossEntropy(logits.t(), labels.t(), loss.t(), grad.t(), ws.t());
  const auto ndhwc = [](Buffer& b) { return b.t().Reshaped(b.shape, core::Layout::kNDHWC); };
  ops::DiceCrossEntropy(ndhwc(last), labels.t(), loss_last.t(), ndhwc(grad_last), ws.t());
  EXPECT_FLOAT_EQ(loss_last[0], loss[0]);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t q = 0; q < s; ++q)
        ASSERT_FLOAT_EQ(grad_last[(i * s + q) * c + j], grad[(i * c + j) * s + q])
            << "sample " << i << " class " << j << " voxel " << q;
}

TEST(MaskedLmLossTest, WeightsSelectPositionsAndGradientMatches) {
  Buffer logits({3, 6}), weights({3}), loss({1}), grad({3, 6});
  IntBuffer labels({3});
  labels.data = {2, 5, 0};
  weights.data = {1.0f, 1.0f, 0.0f};  // the third prediction slot is padding
  testing::FillRandom(logits, 3, -2.0f, 2.0f);
  ops::MaskedLmLoss(logits.t(), labels.t(), weights.t(), loss.t(), grad.t());
  double nll = 0.0;
  for (int r = 0; r < 2; ++r) {
    double se = 0;
    for (int j = 0; j < 6; ++j) se += std::exp(logits[r * 6 + j]);
    nll += std::log(se) - logits[r * 6 + labels.data[r]];
  }
  EXPECT_NEAR(loss[0], nll / (2.0 + 1e-5), 1e-6);
  for (int j = 0; j < 6; ++j) EXPECT_EQ(grad[12 + j], 0.0f);
  auto value = [&] {
    Buffer scratch({3, 6});
    ops::MaskedLmLoss(logits.t(), labels.t(), weights.t(), loss.t(), scratch.t());
    return static_cast<double>(loss[0]);
  };
  testing::ExpectGradientMatches(logits, grad.data, value, 1e-2, 2e-3, "masked lm");
}

TEST(ArgmaxRowsTest, FirstLargestSkippingNaN) {
  // Random rows as std::max_element finds them, then rows with ties, NaN,
  // -Inf and all-NaN.
  const int64_t classes = 37;
  Buffer logits({8, classes});
  testing::FillRandom(logits, 5, -3.0f, 3.0f);
  float* row4 = logits.data.data() + 4 * classes;
  row4[3] = row4[20] = 9.0f;  // tie: the first
  float* row5 = logits.data.data() + 5 * classes;
  row5[0] = NAN;
  row5[11] = 8.0f;  // NaN is never the largest
  float* row6 = logits.data.data() + 6 * classes;
  for (int64_t j = 0; j < classes; ++j) row6[j] = j == 30 ? -1e30f : -INFINITY;
  float* row7 = logits.data.data() + 7 * classes;
  for (int64_t j = 0; j < classes; ++j) row7[j] = NAN;
  IntBuffer argmax({8});
  ops::ArgmaxRows(logits.t(), argmax.t());
  for (int r = 0; r < 4; ++r) {
    const float* z = logits.data.data() + r * classes;
    EXPECT_EQ(argmax.data[r], std::max_element(z, z + classes) - z) << "row " << r;
  }
  EXPECT_EQ(argmax.data[4], 3);
  EXPECT_EQ(argmax.data[5], 11);
  EXPECT_EQ(argmax.data[6], 30);
  EXPECT_EQ(argmax.data[7], 0);
}

}  // namespace
}  // namespace mlperf
