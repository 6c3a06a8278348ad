// Batch norm fused with the residual add and ReLU: equal to the unfused ops
// (BN, Add, ReLU; ReluBackward, BN backward) in both layouts, on one thread
// and on a team, and the fused backward against central differences.
#include <gtest/gtest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/dispatch.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::Layout;
using core::Shape;
using core::Tensor;
using testing::Buffer;

struct Case {
  int64_t n, c, h, w;
  bool channels_last;
};

Shape ShapeOf(const Case& k) {
  return k.channels_last ? Shape{k.n, k.h, k.w, k.c} : Shape{k.n, k.c, k.h, k.w};
}

Tensor View(Buffer& b, const Case& k) {
  return b.t().Reshaped(ShapeOf(k), k.channels_last ? Layout::kNHWC : Layout::kNCHW);
}

// Relative-or-absolute closeness, element by element.
void ExpectNear(const Buffer& want, const Buffer& got, double tol, const std::string& what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  int bad = 0;
  for (int64_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(want.data[i] - got.data[i]) <= tol * (1.0 + std::fabs(want.data[i]))) &&
        ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": " << want.data[i] << " vs " << got.data[i];
  EXPECT_EQ(bad, 0) << what;
}

// 37 channels: not a multiple of any vector width. The larger cases are
// above the size where the kernels start an OpenMP team.
std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (bool cl : {false, true}) {
    cases.push_back({3, 37, 5, 4, cl});
    cases.push_back({4, 40, 24, 18, cl});
  }
  return cases;
}

void CompareWithUnfused(const Case& k, bool relu, bool residual) {
  const std::string what = std::string(k.channels_last ? "nhwc" : "nchw") + (relu ? " relu" : "") +
                           (residual ? " residual" : "") + " c" + std::to_string(k.c);
  const Shape shape = ShapeOf(k);
  Buffer x(shape), res(shape), y_ref(shape), y(shape), dy_ref(shape), dy(shape);
  Buffer dx_ref(shape), dx(shape);
  // An offset mean: the statistics must not cancel.
  testing::FillRandom(x, 21, 3.0f, 7.0f);
  testing::FillRandom(res, 22);
  testing::FillRandom(dy_ref, 23);
  dy.data = dy_ref.data;
  Buffer gamma({k.c}), beta({k.c}), rm_ref({k.c}), rv_ref({k.c}, 1.0f);
  testing::FillRandom(gamma, 24, 0.5f, 1.5f);
  testing::FillRandom(beta, 25);
  testing::FillRandom(rm_ref, 26);
  Buffer rm = rm_ref, rv = rv_ref, mean_ref({k.c}), mean({k.c}), istd_ref({k.c}), istd({k.c});
  Buffer dg_ref({k.c}), dg({k.c}), db_ref({k.c}), db({k.c});
  const cpu::BatchNormParams p;
  const Tensor no_residual;

  cpu::BatchNormForwardTraining(p, View(x, k), gamma.t(), beta.t(), View(y_ref, k), mean_ref.t(),
                                istd_ref.t(), rm_ref.t(), rv_ref.t());
  if (residual) ops::Add(View(y_ref, k), View(res, k), View(y_ref, k));
  if (relu) ops::ReluForward(View(y_ref, k), View(y_ref, k));
  cpu::BatchNormActForwardTraining(p, relu, View(x, k), residual ? View(res, k) : no_residual,
                                   gamma.t(), beta.t(), View(y, k), mean.t(), istd.t(), rm.t(),
                                   rv.t());
  ExpectNear(y_ref, y, 1e-6, what + " y");
  ExpectNear(mean_ref, mean, 1e-6, what + " mean");
  ExpectNear(istd_ref, istd, 1e-6, what + " inv_std");
  ExpectNear(rm_ref, rm, 1e-6, what + " running mean");
  ExpectNear(rv_ref, rv, 1e-6, what + " running var");

  if (relu) ops::ReluBackward(View(y_ref, k), View(dy_ref, k), View(dy_ref, k));
  cpu::BatchNormBackward(View(x, k), View(dy_ref, k), gamma.t(), mean_ref.t(), istd_ref.t(),
                         View(dx_ref, k), dg_ref.t(), db_ref.t());
  cpu::BatchNormActBackward(relu, View(x, k), View(y, k), View(dy, k), gamma.t(), mean.t(),
                            istd.t(), View(dx, k), dg.t(), db.t());
  // dy now holds the gradient before the ReLU (the residual's gradient).
  ExpectNear(dy_ref, dy, 0.0, what + " dy after backward");
  ExpectNear(dx_ref, dx, 1e-5, what + " dx");
  ExpectNear(dg_ref, dg, 1e-5, what + " dgamma");
  ExpectNear(db_ref, db, 1e-5, what + " dbeta");

  cpu::BatchNormForwardInference(p, View(x, k), gamma.t(), beta.t(), rm.t(), rv.t(),
                                 View(y_ref, k));
  if (residual) ops::Add(View(y_ref, k), View(res, k), View(y_ref, k));
  if (relu) ops::ReluForward(View(y_ref, k), View(y_ref, k));
  cpu::BatchNormActForwardInference(p, relu, View(x, k), residual ? View(res, k) : no_residual,
                                    gamma.t(), beta.t(), rm.t(), rv.t(), View(y, k));
  ExpectNear(y_ref, y, 1e-6, what + " inference y");
}

TEST(BatchNormActTest, MatchesUnfusedOps) {
  for (const Case& k : Cases())
    for (bool relu : {false, true})
      for (bool residual : {false, true}) CompareWithUnfused(k, relu, residual);
}

// The channels-last statistics are summed per thread: a team of any size
// must agree with one thread.
TEST(BatchNormActTest, OneThreadMatchesATeam) {
  const Case k{4, 40, 24, 18, true};
  const Shape shape = ShapeOf(k);
  Buffer x(shape), res(shape), dy1(shape), dy2(shape), y1(shape), y2(shape), dx1(shape), dx2(shape);
  testing::FillRandom(x, 31, -2.0f, 3.0f);
  testing::FillRandom(res, 32);
  testing::FillRandom(dy1, 33);
  dy2.data = dy1.data;
  Buffer gamma({k.c}, 1.25f), beta({k.c}, 0.25f), rm1({k.c}), rv1({k.c}, 1.0f);
  Buffer rm2 = rm1, rv2 = rv1, m1({k.c}), m2({k.c}), s1({k.c}), s2({k.c});
  Buffer dg1({k.c}), dg2({k.c}), db1({k.c}), db2({k.c});
  const int saved = omp_get_max_threads();
  for (int run = 0; run < 2; ++run) {
    omp_set_num_threads(run == 0 ? 1 : std::max(saved, 3));
    Buffer& y = run == 0 ? y1 : y2;
    Buffer& dy = run == 0 ? dy1 : dy2;
    Buffer& dx = run == 0 ? dx1 : dx2;
    cpu::BatchNormActForwardTraining({}, true, View(x, k), View(res, k), gamma.t(), beta.t(),
                                     View(y, k), (run == 0 ? m1 : m2).t(), (run == 0 ? s1 : s2).t(),
                                     (run == 0 ? rm1 : rm2).t(), (run == 0 ? rv1 : rv2).t());
    cpu::BatchNormActBackward(true, View(x, k), View(y, k), View(dy, k), gamma.t(),
                              (run == 0 ? m1 : m2).t(), (run == 0 ? s1 : s2).t(), View(dx, k),
                              (run == 0 ? dg1 : dg2).t(), (run == 0 ? db1 : db2).t());
  }
  omp_set_num_threads(saved);
  ExpectNear(y1, y2, 1e-6, "y");
  ExpectNear(m1, m2, 1e-6, "mean");
  ExpectNear(s1, s2, 1e-6, "inv_std");
  ExpectNear(dx1, dx2, 1e-5, "dx");
  ExpectNear(dg1, dg2, 1e-5, "dgamma");
  ExpectNear(db1, db2, 1e-5, "dbeta");
}

// L = sum(r * relu(BN(x) + residual)) against central differences, for x,
// gamma, beta and the residual (whose gradient is the masked dy).
TEST(BatchNormActTest, BackwardMatchesFiniteDifferences) {
  for (bool cl : {false, true}) {
    const Case k{3, 2, 2, 3, cl};
    const std::string what = cl ? "nhwc" : "nchw";
    const Shape shape = ShapeOf(k);
    Buffer x(shape), res(shape), r(shape), gamma({k.c}), beta({k.c});
    testing::FillRandom(x, 41, -2.0f, 2.0f);
    testing::FillRandom(res, 42);
    testing::FillRandom(r, 43);
    testing::FillRandom(gamma, 44, 0.5f, 1.5f);
    testing::FillRandom(beta, 45);
    Buffer rm({k.c}), rv({k.c}, 1.0f), mean({k.c}), istd({k.c}), y(shape);
    auto forward = [&] {
      cpu::BatchNormActForwardTraining({}, true, View(x, k), View(res, k), gamma.t(), beta.t(),
                                       View(y, k), mean.t(), istd.t(), rm.t(), rv.t());
    };
    auto loss = [&] {
      forward();
      return testing::Dot(r, y);
    };
    forward();
    // A pre-activation within the step of the ReLU's kink would make the
    // differences meaningless: the seeds keep them away (checked).
    Buffer pre(shape);
    cpu::BatchNormActForwardTraining({}, false, View(x, k), View(res, k), gamma.t(), beta.t(),
                                     View(pre, k), mean.t(), istd.t(), rm.t(), rv.t());
    for (float v : pre.data) ASSERT_GT(std::fabs(v), 0.02f) << what;
    forward();
    Buffer dy = r, dx(shape), dg({k.c}), db({k.c});
    cpu::BatchNormActBackward(true, View(x, k), View(y, k), View(dy, k), gamma.t(), mean.t(),
                              istd.t(), View(dx, k), dg.t(), db.t());
    testing::ExpectGradientMatches(x, dx.data, loss, 1e-3, 3e-3, (what + " x").c_str());
    testing::ExpectGradientMatches(gamma, dg.data, loss, 1e-3, 3e-3, (what + " gamma").c_str());
    testing::ExpectGradientMatches(beta, db.data, loss, 1e-3, 3e-3, (what + " beta").c_str());
    testing::ExpectGradientMatches(res, dy.data, loss, 1e-3, 3e-3, (what + " residual").c_str());
  }
}

// Instance norm with its ReLU (3D U-Net's units) in one pass each way: bit
// for bit InstanceNorm + ReluForward, and ReluBackward + the backward, in
// both layouts (two samples of 6x7x5 voxels, 37 channels).
TEST(InstanceNormReluTest, EqualsTheUnfusedOps) {
  for (bool last : {false, true}) {
    const Shape shape = last ? Shape{2, 6, 7, 5, 37} : Shape{2, 37, 6, 7, 5};
    const Layout layout = last ? Layout::kNDHWC : Layout::kNCDHW;
    const auto view = [&](Buffer& b) { return b.t().Reshaped(shape, layout); };
    const std::string what = last ? "ndhwc" : "ncdhw";
    Buffer x(shape), dy(shape), gamma({37}), beta({37});
    testing::FillRandom(x, 51, -2.0f, 3.0f);
    testing::FillRandom(dy, 52);
    testing::FillRandom(gamma, 53, 0.5f, 1.5f);
    testing::FillRandom(beta, 54);
    Buffer y(shape), y_fused(shape), mean({74}), inv_std({74});
    cpu::InstanceNormForward(1e-5f, view(x), gamma.t(), beta.t(), view(y), mean.t(), inv_std.t());
    ops::ReluForward(view(y), view(y));
    cpu::InstanceNormForward(1e-5f, view(x), gamma.t(), beta.t(), view(y_fused), mean.t(),
                             inv_std.t(), true);
    EXPECT_EQ(y.data, y_fused.data) << what;
    Buffer dy_fused = dy, dx(shape), dx_fused(shape), dg({37}), dg_fused({37}), db({37}),
           db_fused({37});
    ops::ReluBackward(view(y), view(dy), view(dy));
    cpu::InstanceNormBackward(view(x), view(dy), gamma.t(), mean.t(), inv_std.t(), view(dx), dg.t(),
                              db.t());
    cpu::InstanceNormBackward(view(x), view(dy_fused), gamma.t(), mean.t(), inv_std.t(),
                              view(dx_fused), dg_fused.t(), db_fused.t(), view(y));
    EXPECT_EQ(dy.data, dy_fused.data) << what << ": the masked dy";
    EXPECT_EQ(dx.data, dx_fused.data) << what;
    EXPECT_EQ(dg.data, dg_fused.data) << what;
    EXPECT_EQ(db.data, db_fused.data) << what;
  }
}

}  // namespace
}  // namespace mlperf
