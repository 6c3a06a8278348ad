// Batch, instance and layer norm: forward statistics, running-statistics
// update rule, and backward against central differences.
#include "reference/kernels/cpu/norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;

TEST(BatchNormTest, TrainingNormalisesPerChannelAndUpdatesRunningStats) {
  const int64_t n = 3, c = 2, s = 5;
  Buffer x({n, c, s}), gamma({c}, 1.0f), beta({c}, 0.0f), y({n, c, s});
  Buffer mean({c}), inv_std({c}), running_mean({c}, 0.5f), running_var({c}, 2.0f);
  testing::FillRandom(x, 1, -2.0f, 3.0f);
  cpu::BatchNormParams p{.epsilon = 1e-5f, .momentum = 0.1f};
  cpu::BatchNormForwardTraining(p, x.t(), gamma.t(), beta.t(), y.t(), mean.t(), inv_std.t(),
                                running_mean.t(), running_var.t());
  for (int64_t ch = 0; ch < c; ++ch) {
    double sum = 0, sq = 0, ysum = 0, ysq = 0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t q = 0; q < s; ++q) {
        const double v = x[(i * c + ch) * s + q], w = y[(i * c + ch) * s + q];
        sum += v;
        sq += v * v;
        ysum += w;
        ysq += w * w;
      }
    const double m = sum / (n * s), var = sq / (n * s) - m * m;
    EXPECT_NEAR(ysum / (n * s), 0.0, 1e-5);
    EXPECT_NEAR(ysq / (n * s), var / (var + 1e-5), 1e-4);
    // Keras momentum 0.9 == new-batch weight 0.1; running var is unbiased.
    EXPECT_NEAR(running_mean[ch], 0.9 * 0.5 + 0.1 * m, 1e-5);
    EXPECT_NEAR(running_var[ch], 0.9 * 2.0 + 0.1 * var * (n * s) / (n * s - 1), 1e-5);
    EXPECT_NEAR(inv_std[ch], 1.0 / std::sqrt(var + 1e-5), 1e-4);
  }
}

TEST(BatchNormTest, InferenceUsesRunningStatistics) {
  Buffer x({2, 2, 1}), gamma({2}), beta({2}), rm({2}), rv({2}), y({2, 2, 1});
  x.data = {1.0f, 2.0f, 3.0f, 4.0f};
  gamma.data = {2.0f, 0.5f};
  beta.data = {1.0f, -1.0f};
  rm.data = {1.0f, 2.0f};
  rv.data = {4.0f, 0.25f};
  cpu::BatchNormForwardInference({.epsilon = 0.0f}, x.t(), gamma.t(), beta.t(), rm.t(), rv.t(),
                                 y.t());
  EXPECT_FLOAT_EQ(y[0], 2.0f * (1 - 1) / 2 + 1);
  EXPECT_FLOAT_EQ(y[1], 0.5f * (2 - 2) / 0.5f - 1);
  EXPECT_FLOAT_EQ(y[2], 2.0f * (3 - 1) / 2 + 1);
  EXPECT_FLOAT_EQ(y[3], 0.5f * (4 - 2) / 0.5f - 1);
}

// One harness for the three norms: L = <r, norm(x; gamma, beta)>.
template <typename Forward, typename Backward>
void CheckNormGradients(Buffer& x, Buffer& gamma, Buffer& beta, int64_t stats, Forward forward,
                        Backward backward, const char* what) {
  Buffer y(x.shape), r(x.shape), mean({stats}), inv_std({stats});
  Buffer dx(x.shape), dgamma(gamma.shape), dbeta(beta.shape);
  testing::FillRandom(x, 21, -2.0f, 2.0f);
  testing::FillRandom(gamma, 22, 0.5f, 1.5f);
  testing::FillRandom(beta, 23);
  testing::FillRandom(r, 24);
  auto loss = [&] {
    forward(y, mean, inv_std);
    return testing::Dot(y, r);
  };
  loss();
  backward(r, mean, inv_std, dx, dgamma, dbeta);
  testing::ExpectGradientMatches(x, dx.data, loss, 1e-2, 3e-3, what);
  testing::ExpectGradientMatches(gamma, dgamma.data, loss, 1e-2, 3e-3, what);
  testing::ExpectGradientMatches(beta, dbeta.data, loss, 1e-2, 3e-3, what);
}

TEST(BatchNormTest, BackwardMatchesFiniteDifferences) {
  Buffer x({3, 2, 2, 2}), gamma({2}), beta({2}), rm({2}), rv({2}, 1.0f);
  CheckNormGradients(
      x, gamma, beta, 2,
      [&](Buffer& y, Buffer& m, Buffer& is) {
        cpu::BatchNormForwardTraining({}, x.t(), gamma.t(), beta.t(), y.t(), m.t(), is.t(), rm.t(),
                                      rv.t());
      },
      [&](Buffer& dy, Buffer& m, Buffer& is, Buffer& dx, Buffer& dg, Buffer& db) {
        cpu::BatchNormBackward(x.t(), dy.t(), gamma.t(), m.t(), is.t(), dx.t(), dg.t(), db.t());
      },
      "batch norm");
}

TEST(InstanceNormTest, BackwardMatchesFiniteDifferences) {
  Buffer x({2, 3, 2, 2, 2}), gamma({3}), beta({3});
  CheckNormGradients(
      x, gamma, beta, 6,
      [&](Buffer& y, Buffer& m, Buffer& is) {
        cpu::InstanceNormForward(1e-5f, x.t(), gamma.t(), beta.t(), y.t(), m.t(), is.t());
      },
      [&](Buffer& dy, Buffer& m, Buffer& is, Buffer& dx, Buffer& dg, Buffer& db) {
        cpu::InstanceNormBackward(x.t(), dy.t(), gamma.t(), m.t(), is.t(), dx.t(), dg.t(), db.t());
      },
      "instance norm");
}

core::Tensor Ndhwc(Buffer& b) { return b.t().Reshaped(b.shape, core::Layout::kNDHWC); }

TEST(InstanceNormTest, ChannelsLastBackwardMatchesFiniteDifferences) {
  Buffer x({2, 2, 2, 2, 3}), gamma({3}), beta({3});
  CheckNormGradients(
      x, gamma, beta, 6,
      [&](Buffer& y, Buffer& m, Buffer& is) {
        cpu::InstanceNormForward(1e-5f, Ndhwc(x), gamma.t(), beta.t(), Ndhwc(y), m.t(), is.t());
      },
      [&](Buffer& dy, Buffer& m, Buffer& is, Buffer& dx, Buffer& dg, Buffer& db) {
        cpu::InstanceNormBackward(Ndhwc(x), Ndhwc(dy), gamma.t(), m.t(), is.t(), Ndhwc(dx), dg.t(),
                                  db.t());
      },
      "instance norm ndhwc");
}

// [n, c, s] -> [n, s, c].
Buffer ToChannelsLast(const Buffer& b, int64_t n, int64_t c, const core::Shape& shape) {
  Buffer out(shape);
  const int64_t s = b.size() / (n * c);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < c; ++j)
      for (int64_t q = 0; q < s; ++q) out[(i * s + q) * c + j] = b.data[(i * c + j) * s + q];
  return out;
}

// Both layouts on a volume above the size where the kernels start a team,
// 37 channels (no vector width divides it) and an offset mean.
TEST(InstanceNormTest, ChannelsLastMatchesChannelsFirst) {
  const int64_t n = 2, c = 37, d = 6, h = 9, w = 10;
  const core::Shape first{n, c, d, h, w}, last{n, d, h, w, c};
  Buffer x(first), dy(first), gamma({c}), beta({c});
  testing::FillRandom(x, 31, 3.0f, 7.0f);
  testing::FillRandom(dy, 32);
  testing::FillRandom(gamma, 33, 0.5f, 1.5f);
  testing::FillRandom(beta, 34);
  Buffer y(first), dx(first), mean({n * c}), inv_std({n * c}), dg({c}), db({c});
  cpu::InstanceNormForward(1e-5f, x.t(), gamma.t(), beta.t(), y.t(), mean.t(), inv_std.t());
  cpu::InstanceNormBackward(x.t(), dy.t(), gamma.t(), mean.t(), inv_std.t(), dx.t(), dg.t(),
                            db.t());

  Buffer x_last = ToChannelsLast(x, n, c, last), dy_last = ToChannelsLast(dy, n, c, last);
  Buffer y_last(last), dx_last(last), mean_last({n * c}), inv_std_last({n * c});
  Buffer dg_last({c}), db_last({c});
  cpu::InstanceNormForward(1e-5f, Ndhwc(x_last), gamma.t(), beta.t(), Ndhwc(y_last), mean_last.t(),
                           inv_std_last.t());
  cpu::InstanceNormBackward(Ndhwc(x_last), Ndhwc(dy_last), gamma.t(), mean_last.t(),
                            inv_std_last.t(), Ndhwc(dx_last), dg_last.t(), db_last.t());
  auto expect_near = [](const Buffer& want, const Buffer& got, double tol, const char* what) {
    int bad = 0;
    for (int64_t i = 0; i < want.size(); ++i)
      if (!(std::fabs(want.data[i] - got.data[i]) <= tol * (1.0 + std::fabs(want.data[i]))) &&
          ++bad <= 5)
        ADD_FAILURE() << what << " " << i << ": " << want.data[i] << " vs " << got.data[i];
  };
  expect_near(mean, mean_last, 1e-6, "mean");
  expect_near(inv_std, inv_std_last, 1e-5, "inv_std");
  expect_near(ToChannelsLast(y, n, c, last), y_last, 1e-5, "y");
  expect_near(ToChannelsLast(dx, n, c, last), dx_last, 1e-5, "dx");
  expect_near(dg, dg_last, 1e-4, "dgamma");
  expect_near(db, db_last, 1e-4, "dbeta");
}

TEST(LayerNormTest, BackwardMatchesFiniteDifferences) {
  Buffer x({4, 6}), gamma({6}), beta({6});
  CheckNormGradients(
      x, gamma, beta, 4,
      [&](Buffer& y, Buffer& m, Buffer& is) {
        cpu::LayerNormForward(1e-12f, x.t(), gamma.t(), beta.t(), y.t(), m.t(), is.t());
      },
      [&](Buffer& dy, Buffer& m, Buffer& is, Buffer& dx, Buffer& dg, Buffer& db) {
        cpu::LayerNormBackward(x.t(), dy.t(), gamma.t(), m.t(), is.t(), dx.t(), dg.t(), db.t());
      },
      "layer norm");
}

TEST(LayerNormTest, RowsHaveZeroMeanUnitVarianceBeforeAffine) {
  Buffer x({3, 8}), gamma({8}, 1.0f), beta({8}, 0.0f), y({3, 8}), m({3}), is({3});
  testing::FillRandom(x, 5, -3.0f, 5.0f);
  cpu::LayerNormForward(1e-12f, x.t(), gamma.t(), beta.t(), y.t(), m.t(), is.t());
  for (int r = 0; r < 3; ++r) {
    double s = 0, sq = 0;
    for (int f = 0; f < 8; ++f) {
      s += y[r * 8 + f];
      sq += y[r * 8 + f] * y[r * 8 + f];
    }
    EXPECT_NEAR(s / 8, 0.0, 1e-6);
    EXPECT_NEAR(sq / 8, 1.0, 1e-5);
  }
}

}  // namespace
}  // namespace mlperf
