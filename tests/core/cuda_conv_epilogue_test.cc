// Label `gpu`: the inference convolution + batch norm as one cuDNN kernel
// (ops::ConvBatchNormActForwardInference with cuda::ConvEpilogues() on: the
// normalisation, residual add and ReLU in the convolution's epilogue)
// against the same op as two (the convolution, then the batch norm), at
// ResNet-50's shapes in small, under bf16 and fp16 with typed channels-last
// storage: cuDNN fuses each of them, the outputs agree within the
// roundings the fused kernel leaves out, and a second run gives the same
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

class CudaConvEpilogueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device; the CPU op has its own test";
  }
  void TearDown() override {
    cuda::SetConvEpilogues(epilogues_);
    cuda::SetConvGraphApi(graph_api_);
  }

 private:
  const bool epilogues_ = cuda::ConvEpilogues();
  const bool graph_api_ = cuda::ConvGraphApi();
};

struct Case {
  std::string name;
  ConvGeometry g;
  bool residual, relu;
};

// y of the op on the same inputs each time.
Floats RunOp(const Case& c, DType dtype) {
  const ConvGeometry& g = c.g;
  const int64_t k = g.out_channels, ho = g.out(1), wo = g.out(2);
  const int64_t nx = g.batch * g.in[1] * g.in[2] * g.in_channels, ny = g.batch * ho * wo * k;
  const Shape x_shape{g.batch, g.in[1], g.in[2], g.in_channels}, y_shape{g.batch, ho, wo, k};
  Dev x(Random(nx, 1), x_shape, dtype, Layout::kNHWC),
      w(Random(k * g.in_channels * g.kernel_volume(), 2, -0.2f, 0.2f),
        {k, g.in_channels, g.kernel[1], g.kernel[2]}),
      residual(Random(ny, 3), y_shape, dtype, Layout::kNHWC),
      z(Floats(ny), y_shape, dtype, Layout::kNHWC), y(Floats(ny), y_shape, dtype, Layout::kNHWC),
      gamma(Random(k, 4, 0.5f, 1.5f), {k}), beta(Random(k, 5), {k}),
      running_mean(Random(k, 6, -0.5f, 0.5f), {k}), running_var(Random(k, 7, 0.5f, 2.0f), {k});
  const BatchNormParams p;  // epsilon 1e-5
  ops::ConvBatchNormActForwardInference(g, x.t(), w.t(), z.t(), Tensor(), p, c.relu,
                                        c.residual ? residual.t() : Tensor(), gamma.t(), beta.t(),
                                        running_mean.t(), running_var.t(), y.t());
  return y.Get();
}

TEST_F(CudaConvEpilogueTest, FusedBatchNormMatchesTheTwoOps) {
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
      cuda::SetConvEpilogues(false);
      const Floats two_ops = RunOp(c, dtype);
      cuda::SetConvEpilogues(true);
      const int64_t before = cuda::ConvEpilogueRuns();
      const Floats fused = RunOp(c, dtype);
      ASSERT_EQ(cuda::ConvEpilogueRuns() - before, 1)
          << what << ": cuDNN offered no engine for the fused epilogue";
      // The two ops round the convolution's output and the normalised value
      // before the residual; the fused kernel rounds only y. Values near 0
      // after the residual add keep the others' absolute error.
      ASSERT_EQ(fused.size(), two_ops.size());
      int off = 0;
      for (size_t i = 0; i < fused.size(); ++i)
        if (!(std::fabs(fused[i] - two_ops[i]) <= 2 * unit * (std::fabs(two_ops[i]) + 4.0)) &&
            ++off <= 5)
          ADD_FAILURE() << what << " at " << i << ": " << fused[i] << " against " << two_ops[i];
      EXPECT_EQ(off, 0) << what;
      const Floats again = RunOp(c, dtype);
      EXPECT_EQ(std::memcmp(again.data(), fused.data(), fused.size() * sizeof(float)), 0)
          << what << ": a second run differs";
    }
  }
}

// Without the switch, or in fp32 (the op's operands are not of a 16-bit
// type), the two ops run: nothing fused.
TEST_F(CudaConvEpilogueTest, Fp32AndTheSwitchOffTakeTheTwoOps) {
  const Case c = {"1x1 64->256", Conv2d(2, 64, 7, 7, 256, 1, 1, 1, 0), false, true};
  cuda::SetConvGraphApi(true);
  const int64_t before = cuda::ConvEpilogueRuns();
  cuda::SetConvEpilogues(false);
  {
    const ops::PrecisionScope scope(DType::kBF16);
    RunOp(c, DType::kBF16);
  }
  cuda::SetConvEpilogues(true);
  {
    const ops::PrecisionScope scope(DType::kF32);
    RunOp(c, DType::kF32);
  }
  EXPECT_EQ(cuda::ConvEpilogueRuns(), before);
}

}  // namespace
}  // namespace mlperf
