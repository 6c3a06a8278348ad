// Label `gpu`: a convolution followed by a batch norm with the statistics
// from cuDNN's epilogue (ops::ConvBatchNormActForwardTraining with
// cuda::ConvChannelSums() on) against the same op with the batch norm's own
// statistics pass, at ResNet-50's shapes in small, under bf16 and fp16 with
// typed channels-last storage: cuDNN fuses every one of them, the results
// agree within a unit of the precision, and a second run gives the same
// bits. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cuda/conv_graph.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "tests/core/cuda_twin_util.h"

namespace mlperf {
namespace {

using namespace twin;  // NOLINT: the shared helpers of the twin tests

class CudaConvStatsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device; the CPU op is the unfused one";
  }
  void TearDown() override {
    cuda::SetConvChannelSums(channel_sums_);
    cuda::SetConvGraphApi(graph_api_);
  }

 private:
  const bool channel_sums_ = cuda::ConvChannelSums();
  const bool graph_api_ = cuda::ConvGraphApi();
};

// What one forward wrote.
struct Result {
  Floats z, y, mean, inv_std, running_mean, running_var;
};

bool SameBits(const Floats& a, const Floats& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// |a - b| <= tol * (|b| + scale).
void ExpectNear(const Floats& a, const Floats& b, double tol, double scale,
                const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  int off = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::fabs(a[i] - b[i]) <= tol * (std::fabs(b[i]) + scale)) && ++off <= 5)
      ADD_FAILURE() << what << " at " << i << ": " << a[i] << " against " << b[i];
  EXPECT_EQ(off, 0) << what;
}

struct Case {
  std::string name;
  ConvGeometry g;
  bool residual, relu;
};

// The op on fresh copies of the same inputs (the running statistics start
// from the same values each time).
Result RunOp(const Case& c, DType dtype) {
  const ConvGeometry& g = c.g;
  const int64_t k = g.out_channels, ho = g.out(1), wo = g.out(2);
  const int64_t nx = g.batch * g.in[1] * g.in[2] * g.in_channels, ny = g.batch * ho * wo * k;
  const Shape x_shape{g.batch, g.in[1], g.in[2], g.in_channels}, y_shape{g.batch, ho, wo, k};
  Dev x(Random(nx, 1), x_shape, dtype, Layout::kNHWC),
      w(Random(k * g.in_channels * g.kernel_volume(), 2, -0.2f, 0.2f),
        {k, g.in_channels, g.kernel[1], g.kernel[2]}),
      residual(Random(ny, 3), y_shape, dtype, Layout::kNHWC),
      z(Floats(ny), y_shape, dtype, Layout::kNHWC), y(Floats(ny), y_shape, dtype, Layout::kNHWC),
      gamma(Random(k, 4, 0.5f, 1.5f), {k}), beta(Random(k, 5), {k}), mean(Floats(k), {k}),
      inv_std(Floats(k), {k}), running_mean(Random(k, 6), {k}),
      running_var(Random(k, 7, 0.5f, 2.0f), {k});
  Dev mask(std::vector<int32_t>(ops::ReluMaskWords(y.t())), {ops::ReluMaskWords(y.t())});
  const BatchNormParams p;  // epsilon 1e-5, momentum 0.1
  ops::ConvBatchNormActForwardTraining(g, x.t(), w.t(), z.t(), Tensor(), p, c.relu,
                                       c.residual ? residual.t() : Tensor(), gamma.t(), beta.t(),
                                       y.t(), mean.t(), inv_std.t(), running_mean.t(),
                                       running_var.t(), c.relu ? mask.t() : Tensor());
  return {z.Get(), y.Get(), mean.Get(), inv_std.Get(), running_mean.Get(), running_var.Get()};
}

TEST_F(CudaConvStatsTest, StatisticsFromTheEpilogueMatchTheBatchNormsOwn) {
  ConvGeometry strided = Conv2d(8, 64, 14, 14, 64, 3, 3, 2, 1);
  SetSamePadding(&strided);  // ResNet's strided 3x3: the extra row at the end
  const std::vector<Case> cases = {
      {"1x1 64->256 + residual + relu", Conv2d(8, 64, 14, 14, 256, 1, 1, 1, 0), true, true},
      {"3x3 64->64 + relu", Conv2d(8, 64, 14, 14, 64, 3, 3, 1, 1), false, true},
      {"3x3/2 same 64->64 + relu", strided, false, true},
      {"1x1/2 downsample 64->256", Conv2d(8, 64, 14, 14, 256, 1, 1, 2, 0), false, false}};
  cuda::SetConvGraphApi(true);
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    const ops::PrecisionScope scope(dtype);
    const double unit = dtype == DType::kBF16 ? 0x1p-8 : 0x1p-11;
    for (const Case& c : cases) {
      const std::string what = c.name + " " + Name(dtype);
      cuda::SetConvChannelSums(false);
      const Result own = RunOp(c, dtype);
      cuda::SetConvChannelSums(true);
      const int64_t before = cuda::ConvChannelSumsRuns();
      const Result fused = RunOp(c, dtype);
      ASSERT_EQ(cuda::ConvChannelSumsRuns() - before, 1)
          << what << ": cuDNN offered no deterministic engine for the fused statistics";
      // The convolutions may take different engines: a unit of the precision.
      ExpectNear(fused.z, own.z, 2 * unit, 0.05, what + " z");
      // The sums are of the fp32 results before rounding, in another order.
      Floats std_own(own.inv_std.size());
      for (size_t i = 0; i < std_own.size(); ++i) std_own[i] = 1.0f / own.inv_std[i];
      Floats mean_gap(own.mean.size());
      for (size_t i = 0; i < mean_gap.size(); ++i)
        mean_gap[i] = (fused.mean[i] - own.mean[i]) / std_own[i];
      ExpectNear(mean_gap, Floats(mean_gap.size()), 1e-3, 1.0, what + " mean (in std units)");
      ExpectNear(fused.inv_std, own.inv_std, 1e-3, 0.0, what + " inverse std");
      ExpectNear(fused.running_mean, own.running_mean, 1e-3, 0.1, what + " running mean");
      ExpectNear(fused.running_var, own.running_var, 1e-3, 0.0, what + " running variance");
      ExpectNear(fused.y, own.y, 2 * unit, 0.25, what + " y");
      // Deterministic: the same bits again.
      const Result again = RunOp(c, dtype);
      EXPECT_TRUE(SameBits(again.y, fused.y) && SameBits(again.mean, fused.mean) &&
                  SameBits(again.inv_std, fused.inv_std))
          << what << ": a second run differs";
    }
  }
}

// Without the switch, or in fp32 (no tensor-core engine is acceptable), the
// op runs the batch norm's own pass: nothing fused.
TEST_F(CudaConvStatsTest, Fp32AndTheSwitchOffTakeTheOwnPass) {
  const Case c = {"1x1 64->256", Conv2d(2, 64, 7, 7, 256, 1, 1, 1, 0), false, true};
  cuda::SetConvGraphApi(true);
  const int64_t before = cuda::ConvChannelSumsRuns();
  cuda::SetConvChannelSums(false);
  {
    const ops::PrecisionScope scope(DType::kBF16);
    RunOp(c, DType::kBF16);
  }
  cuda::SetConvChannelSums(true);
  {
    const ops::PrecisionScope scope(DType::kF32);
    RunOp(c, DType::kF32);
  }
  EXPECT_EQ(cuda::ConvChannelSumsRuns(), before);
}

}  // namespace
}  // namespace mlperf
