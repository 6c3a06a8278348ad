// Label `gpu`: an inference convolution and the batch norm after it
// (ops::ConvBatchNormActForwardInference) with the normalisation, residual
// add and ReLU in cuDNN's epilogue (cuda::ConvEpilogues() on), against the
// batch norm as a pass of its own, at ResNet-50's shapes in small, under
// bf16 and fp16 with typed channels-last storage. cuDNN fuses every call,
// the results agree within what the fused kernel rounds differently, and a
// second run gives the same bits; fp32 and the switch off fuse nothing.
// Skips without a CUDA device.
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

class CudaConvFusionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!ops::CudaAvailable()) GTEST_SKIP() << "no CUDA device; the CPU ops have their own tests";
    cuda::SetConvGraphApi(true);
  }
  void TearDown() override {
    cuda::SetConvEpilogues(epilogues_);
    cuda::SetConvGraphApi(graph_api_);
  }

 private:
  const bool epilogues_ = cuda::ConvEpilogues();
  const bool graph_api_ = cuda::ConvGraphApi();
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

double Unit(DType dtype) { return dtype == DType::kBF16 ? 0x1p-8 : 0x1p-11; }

struct Case {
  std::string name;
  ConvGeometry g;
  bool residual, relu;
};

// ResNet-50's units: the expansion with its residual, the 3x3s, the strided
// 3x3 with TF "same" padding and the downsampling shortcut.
std::vector<Case> ResNetCases() {
  ConvGeometry strided = Conv2d(8, 64, 14, 14, 64, 3, 3, 2, 1);
  SetSamePadding(&strided);  // the extra row at the end
  return {{"1x1 64->256 + residual + relu", Conv2d(8, 64, 14, 14, 256, 1, 1, 1, 0), true, true},
          {"3x3 64->64 + relu", Conv2d(8, 64, 14, 14, 64, 3, 3, 1, 1), false, true},
          {"3x3/2 same 64->64 + relu", strided, false, true},
          {"1x1/2 downsample 64->256", Conv2d(8, 64, 14, 14, 256, 1, 1, 2, 0), false, false}};
}

// One unit's operands, the same values for every run.
struct Operands {
  Dev x, w, residual, z, y, gamma, beta, running_mean, running_var;
  Operands(const ConvGeometry& g, DType dtype)
      : x(Random(g.batch * g.in[1] * g.in[2] * g.in_channels, 1),
          {g.batch, g.in[1], g.in[2], g.in_channels}, dtype, Layout::kNHWC),
        w(Random(g.out_channels * g.in_channels * g.kernel_volume(), 2, -0.2f, 0.2f),
          {g.out_channels, g.in_channels, g.kernel[1], g.kernel[2]}),
        residual(Random(Outputs(g), 3), OutShape(g), dtype, Layout::kNHWC),
        z(Floats(Outputs(g)), OutShape(g), dtype, Layout::kNHWC),
        y(Floats(Outputs(g)), OutShape(g), dtype, Layout::kNHWC),
        gamma(Random(g.out_channels, 4, 0.5f, 1.5f), {g.out_channels}),
        beta(Random(g.out_channels, 5), {g.out_channels}),
        running_mean(Random(g.out_channels, 6, -0.5f, 0.5f), {g.out_channels}),
        running_var(Random(g.out_channels, 7, 0.5f, 2.0f), {g.out_channels}) {}
  static int64_t Outputs(const ConvGeometry& g) {
    return g.batch * g.out(1) * g.out(2) * g.out_channels;
  }
  static Shape OutShape(const ConvGeometry& g) {
    return {g.batch, g.out(1), g.out(2), g.out_channels};
  }
};

// y of an inference forward.
Floats RunInference(const Case& c, DType dtype) {
  Operands o(c.g, dtype);
  ops::ConvBatchNormActForwardInference(c.g, o.x.t(), o.w.t(), o.z.t(), Tensor(), BatchNormParams(),
                                        c.relu, c.residual ? o.residual.t() : Tensor(), o.gamma.t(),
                                        o.beta.t(), o.running_mean.t(), o.running_var.t(), o.y.t());
  return o.y.Get();
}

TEST_F(CudaConvFusionTest, InferenceBatchNormInTheEpilogueMatchesTheTwoOps) {
  for (const DType dtype : {DType::kBF16, DType::kF16}) {
    const ops::PrecisionScope scope(dtype);
    for (const Case& c : ResNetCases()) {
      const std::string what = c.name + " " + Name(dtype);
      cuda::SetConvEpilogues(false);
      const Floats two_ops = RunInference(c, dtype);
      cuda::SetConvEpilogues(true);
      const int64_t before = cuda::ConvEpilogueRuns();
      const Floats fused = RunInference(c, dtype);
      ASSERT_EQ(cuda::ConvEpilogueRuns() - before, 1)
          << what << ": cuDNN offered no engine for the fused epilogue";
      // The two ops round the convolution's output and the normalised value
      // before the residual; the fused kernel rounds only y. Values near 0
      // after the residual add keep the others' absolute error.
      ExpectNear(fused, two_ops, 2 * Unit(dtype), 4.0, what + " y");
      EXPECT_TRUE(SameBits(RunInference(c, dtype), fused)) << what << ": a second run differs";
    }
  }
}

// Without the switch, or in fp32 (no tensor-core engine is acceptable, and
// the operands are not of a 16-bit type), the batch norm runs its own pass:
// nothing fused.
TEST_F(CudaConvFusionTest, Fp32AndTheSwitchesOffFuseNothing) {
  const Case c = {"1x1 64->256", Conv2d(2, 64, 7, 7, 256, 1, 1, 1, 0), false, true};
  const int64_t epilogues = cuda::ConvEpilogueRuns();
  cuda::SetConvEpilogues(false);
  {
    const ops::PrecisionScope scope(DType::kBF16);
    RunInference(c, DType::kBF16);
  }
  cuda::SetConvEpilogues(true);
  {
    const ops::PrecisionScope scope(DType::kF32);
    RunInference(c, DType::kF32);
  }
  EXPECT_EQ(cuda::ConvEpilogueRuns(), epilogues);
}

}  // namespace
}  // namespace mlperf
