// The host's typed inference storage (ops::InferenceStorageType): under bf16
// with the GEMMs on AMX tiles, the fused conv + BN and the pooling forwards
// read and write bf16 activations, and give bit for bit the values of fp32
// storage. Skipped on a CPU without AMX, where the storage stays fp32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/round.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;
using testing::FillRandom;

// Values stored in bf16: the fp32 copy holds the same values.
struct Bf16Buffer {
  std::vector<uint16_t> bits;
  core::Shape shape;
  explicit Bf16Buffer(core::Shape s) : bits(s.numel(), 0xffff), shape(s) {}
  explicit Bf16Buffer(const Buffer& b) : bits(b.data.size()), shape(b.shape) {
    for (size_t i = 0; i < bits.size(); ++i) bits[i] = cpu::Bf16Bits(b.data[i]);
  }
  core::Tensor t() {
    return core::Tensor(bits.data(), shape, core::DType::kBF16, core::Device::kCpu,
                        core::Layout::kNHWC);
  }
  std::vector<float> Values() const {
    std::vector<float> v(bits.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = cpu::Bf16Value(bits[i]);
    return v;
  }
};

core::Tensor Nhwc(Buffer& b) { return b.t().Reshaped(b.shape, core::Layout::kNHWC); }

void RoundToBf16(Buffer& b) {
  for (float& v : b.data) v = cpu::RoundToBf16(v);
}

class TypedInference : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu::GemmsRoundToBf16()) GTEST_SKIP() << "no AMX bf16 here: host storage stays fp32";
    ASSERT_EQ(ops::InferenceStorageType(core::Device::kCpu), core::DType::kBF16);
  }
  const ops::PrecisionScope precision_{core::DType::kBF16};
  const ops::TypedActivationsScope typed_{true};
};

TEST(TypedInferenceSwitch, Fp32StorageUnlessBf16OnAmxWithTypedActivations) {
  const ops::TypedActivationsScope typed(true);
  EXPECT_EQ(ops::InferenceStorageType(core::Device::kCpu), core::DType::kF32);  // fp32
  {
    const ops::PrecisionScope scope(core::DType::kF16);
    EXPECT_EQ(ops::InferenceStorageType(core::Device::kCpu), core::DType::kF32);
  }
  const ops::PrecisionScope scope(core::DType::kBF16);
  EXPECT_EQ(ops::InferenceStorageType(core::Device::kCpu),
            cpu::GemmsRoundToBf16() ? core::DType::kBF16 : core::DType::kF32);
  const ops::TypedActivationsScope off(false);
  EXPECT_EQ(ops::InferenceStorageType(core::Device::kCpu), core::DType::kF32);
}

// A padded 3x3 from a bf16 input, a strided 7x7 over three channels from an
// fp32 image (the stem), and a pointwise convolution whose rows come in
// several chunks per thread; with and without the residual and the ReLU.
TEST_F(TypedInference, ConvBatchNormGivesTheValuesOfFp32Storage) {
  struct Case {
    ConvGeometry g;
    bool bf16_input;
  };
  const Case cases[] = {{Conv2d(2, 8, 6, 6, 16, 3, 3, 1, 1), true},
                        {Conv2d(3, 3, 20, 20, 8, 7, 7, 2, 3), false},
                        {Conv2d(2, 16, 24, 24, 512, 1, 1, 1, 0), true}};
  for (const Case& c : cases) {
    const ConvGeometry& g = c.g;
    const int64_t k = g.out_channels;
    const core::Shape in{g.batch, g.in[1], g.in[2], g.in_channels};
    const core::Shape out{g.batch, g.out(1), g.out(2), k};
    Buffer x(in), w({k, g.in_channels, g.kernel[1], g.kernel[2]}), residual(out), gamma({k}),
        beta({k}), mean({k}), var({k});
    FillRandom(x, 31);
    FillRandom(w, 32);
    FillRandom(residual, 33);
    FillRandom(gamma, 34, 0.5f, 1.5f);
    FillRandom(beta, 35);
    FillRandom(mean, 36, -0.3f, 0.3f);
    FillRandom(var, 37, 0.5f, 2.0f);
    // Stored activations hold bf16 values in either storage.
    if (c.bf16_input) RoundToBf16(x);
    RoundToBf16(residual);
    Bf16Buffer x16(x), residual16(residual);
    Buffer ws({std::max<int64_t>(
        1, ops::ConvWorkspaceElements(g, core::Layout::kNHWC, core::Device::kCpu))});
    Buffer z(out);
    for (const bool relu : {false, true}) {
      for (const bool add : {false, true}) {
        Buffer y32(out);
        Bf16Buffer y16(out);
        ops::ConvBatchNormActForwardInference(g, Nhwc(x), w.t(), Nhwc(z), ws.t(), {}, relu,
                                              add ? Nhwc(residual) : core::Tensor(), gamma.t(),
                                              beta.t(), mean.t(), var.t(), Nhwc(y32));
        ops::ConvBatchNormActForwardInference(
            g, c.bf16_input ? x16.t() : Nhwc(x), w.t(), Nhwc(z), ws.t(), {}, relu,
            add ? residual16.t() : core::Tensor(), gamma.t(), beta.t(), mean.t(), var.t(), y16.t());
        EXPECT_EQ(y16.Values(), y32.data)
            << "relu " << relu << " residual " << add << " k " << k << " kernel " << g.kernel[1];
      }
    }
  }
}

TEST_F(TypedInference, PoolingGivesTheValuesOfFp32Storage) {
  // ResNet's stem pool: 3x3, stride 2, padding 1, over 64 channels.
  const ConvGeometry g = Conv2d(2, 64, 9, 9, 64, 3, 3, 2, 1);
  const core::Shape in{2, 9, 9, 64}, out{2, g.out(1), g.out(2), 64};
  Buffer x(in);
  FillRandom(x, 41);
  RoundToBf16(x);
  Bf16Buffer x16(x), y16(out);
  Buffer y32(out);
  ops::MaxPoolForward(g, Nhwc(x), Nhwc(y32));
  ops::MaxPoolForward(g, x16.t(), y16.t());
  EXPECT_EQ(y16.Values(), y32.data);

  Buffer f32({2, 64}), f16({2, 64});
  ops::GlobalAvgPoolForward(Nhwc(x), f32.t());
  ops::GlobalAvgPoolForward(x16.t(), f16.t());
  EXPECT_EQ(f16.data, f32.data);
}

}  // namespace
}  // namespace mlperf
