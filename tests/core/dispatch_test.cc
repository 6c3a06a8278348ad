// ops:: on the CPU: each call with host tensors goes to its cpu:: twin and
// gives bitwise its result; tensors of one call on two devices are refused.
#include "reference/kernels/dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/ops/optimizer.h"
#include "reference/kernels/ops/pool.h"
#include "reference/kernels/precision.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using testing::Buffer;
using testing::FillRandom;
using testing::IntBuffer;

TEST(Dispatch, HostTensorsRunTheCpuTwinBitwise) {
  Buffer x({2, 3, 6, 6}), w({4, 3, 3, 3});
  FillRandom(x, 1);
  FillRandom(w, 2);
  const ConvGeometry g = Conv2d(2, 3, 6, 6, 4, 3, 3, 1, 1);
  Buffer ws({std::max<int64_t>(1, cpu::ConvWorkspaceElements(g))});
  Buffer y_ops({2, 4, 6, 6}), y_cpu({2, 4, 6, 6});
  ops::ConvForward(g, x.t(), w.t(), y_ops.t(), ws.t());
  cpu::ConvForward(g, x.t(), w.t(), y_cpu.t(), ws.t());
  EXPECT_EQ(y_ops.data, y_cpu.data);
  EXPECT_EQ(ops::ConvWorkspaceElements(g, core::Layout::kNCHW, core::Device::kCpu),
            cpu::ConvWorkspaceElements(g, core::Layout::kNCHW));

  Buffer gamma({4}, 1.0f), beta({4}, 0.5f), mean({4}), inv({4}), rm_ops({4}), rv_ops({4}, 1.0f);
  Buffer rm_cpu({4}), rv_cpu({4}, 1.0f), bn_ops({2, 4, 6, 6}), bn_cpu({2, 4, 6, 6});
  ops::BatchNormForwardTraining({}, y_ops.t(), gamma.t(), beta.t(), bn_ops.t(), mean.t(), inv.t(),
                                rm_ops.t(), rv_ops.t());
  cpu::BatchNormForwardTraining({}, y_cpu.t(), gamma.t(), beta.t(), bn_cpu.t(), mean.t(), inv.t(),
                                rm_cpu.t(), rv_cpu.t());
  EXPECT_EQ(bn_ops.data, bn_cpu.data);
  EXPECT_EQ(rv_ops.data, rv_cpu.data);

  Buffer r_ops({2, 4, 6, 6}), r_cpu({2, 4, 6, 6});
  ops::ReluForward(bn_ops.t(), r_ops.t());
  ops::ReluForward(bn_cpu.t(), r_cpu.t());
  EXPECT_EQ(r_ops.data, r_cpu.data);

  Buffer pooled_ops({2, 4}), pooled_cpu({2, 4});
  ops::GlobalAvgPoolForward(r_ops.t().Reshaped({2, 4, 6, 6}), pooled_ops.t());
  ops::GlobalAvgPoolForward(r_cpu.t().Reshaped({2, 4, 6, 6}), pooled_cpu.t());
  EXPECT_EQ(pooled_ops.data, pooled_cpu.data);

  Buffer fc({5, 4}), bias({5}), logits_ops({2, 5}), logits_cpu({2, 5});
  FillRandom(fc, 3);
  FillRandom(bias, 4);
  ops::LinearForward(pooled_ops.t(), fc.t(), bias.t(), logits_ops.t());
  cpu::LinearForward(pooled_cpu.t(), fc.t(), bias.t(), logits_cpu.t());
  EXPECT_EQ(logits_ops.data, logits_cpu.data);

  IntBuffer labels({2});
  labels.data = {1, 4};
  Buffer loss_ops({1}), loss_cpu({1}), d_ops({2, 5}), d_cpu({2, 5});
  ops::SoftmaxCrossEntropy(0.1f, 2.0f, logits_ops.t(), labels.t(), loss_ops.t(), d_ops.t());
  ops::SoftmaxCrossEntropy(0.1f, 2.0f, logits_cpu.t(), labels.t(), loss_cpu.t(), d_cpu.t());
  EXPECT_EQ(loss_ops.data, loss_cpu.data);
  EXPECT_EQ(d_ops.data, d_cpu.data);
  EXPECT_GT(loss_ops[0], 0.0f);

  // The optimizer takes raw pointers; the device argument picks the backend.
  Buffer w_ops({20}), w_cpu({20}), grad({20}), m_ops({20}), m_cpu({20});
  FillRandom(w_ops, 5);
  w_cpu.data = w_ops.data;
  FillRandom(grad, 6);
  const std::vector<TensorSlice> slices = {{0, 12, false}, {12, 8, true}};
  const LarsParams lars{.lr = 0.5f, .weight_decay = 1e-4f};
  ops::LarsStep(core::Device::kCpu, lars, slices, w_ops.data.data(), grad.data.data(),
                m_ops.data.data(), nullptr);
  ops::LarsStep(core::Device::kCpu, lars, slices, w_cpu.data.data(), grad.data.data(),
                m_cpu.data.data(), nullptr);
  EXPECT_EQ(w_ops.data, w_cpu.data);
  EXPECT_EQ(m_ops.data, m_cpu.data);

  // Copies and zeroing between host buffers.
  Buffer copy({20});
  ops::Copy(w_ops.t(), copy.t());
  EXPECT_EQ(copy.data, w_ops.data);
  ops::ZeroBytes(copy.data.data(), core::Device::kCpu, 8 * sizeof(float));
  EXPECT_EQ(copy[7], 0.0f);
  EXPECT_EQ(copy[8], w_ops[8]);
  ops::Synchronize(core::Device::kCpu);  // a no-op on the host
}

// In inference the host runs the convolution and the batch norm as one pass
// (cpu/conv_bn.h), and still gives the two ops' bits: every precision, with
// and without the residual and the ReLU, a padded 3x3, a strided 7x7 over
// three channels and a pointwise convolution whose rows come in several
// chunks per thread; channels-first takes the two ops.
TEST(Dispatch, ConvBatchNormInferenceOnTheHostIsTheTwoOps) {
  struct Case {
    ConvGeometry g;
    bool channels_last;
  };
  const Case cases[] = {{Conv2d(2, 8, 6, 6, 16, 3, 3, 1, 1), true},
                        {Conv2d(3, 3, 20, 20, 8, 7, 7, 2, 3), true},
                        {Conv2d(2, 16, 24, 24, 512, 1, 1, 1, 0), true},
                        {Conv2d(2, 8, 6, 6, 16, 3, 3, 1, 1), false}};
  for (const Case& c : cases) {
    const ConvGeometry& g = c.g;
    const int64_t k = g.out_channels;
    const core::Layout layout = c.channels_last ? core::Layout::kNHWC : core::Layout::kNCHW;
    const core::Shape in = c.channels_last ? core::Shape{g.batch, g.in[1], g.in[2], g.in_channels}
                                           : core::Shape{g.batch, g.in_channels, g.in[1], g.in[2]};
    const core::Shape out = c.channels_last ? core::Shape{g.batch, g.out(1), g.out(2), k}
                                            : core::Shape{g.batch, k, g.out(1), g.out(2)};
    Buffer x(in), w({k, g.in_channels, g.kernel[1], g.kernel[2]}), residual(out), gamma({k}),
        beta({k}), mean({k}), var({k});
    FillRandom(x, 21);
    FillRandom(w, 22);
    FillRandom(residual, 23);
    FillRandom(gamma, 24, 0.5f, 1.5f);
    FillRandom(beta, 25);
    FillRandom(mean, 26, -0.3f, 0.3f);
    FillRandom(var, 27, 0.5f, 2.0f);
    Buffer ws({std::max<int64_t>(1, ops::ConvWorkspaceElements(g, layout, core::Device::kCpu))});
    const auto view = [&](Buffer& b) { return b.t().Reshaped(b.shape, layout); };
    for (const core::DType p : {core::DType::kF32, core::DType::kBF16, core::DType::kF16}) {
      const ops::PrecisionScope scope(p);
      for (const bool relu : {false, true}) {
        for (const bool add : {false, true}) {
          Buffer z1(out), y1(out), z2(out), y2(out);
          const core::Tensor res = add ? view(residual) : core::Tensor();
          ops::ConvBatchNormActForwardInference(g, view(x), w.t(), view(z1), ws.t(), {}, relu, res,
                                                gamma.t(), beta.t(), mean.t(), var.t(), view(y1));
          ops::ConvForward(g, view(x), w.t(), view(z2), ws.t());
          ops::BatchNormActForwardInference({}, relu, view(z2), res, gamma.t(), beta.t(), mean.t(),
                                            var.t(), view(y2));
          EXPECT_EQ(y1.data, y2.data) << ops::PrecisionName(p) << " relu " << relu << " residual "
                                      << add << " k " << k << " channels-last " << c.channels_last;
        }
      }
    }
  }
}

// The host threads' copy is a copy: every byte, for sizes that are and are
// not whole blocks, below and above the size where threads join.
TEST(Dispatch, ParallelHostCopyCopiesEveryByte) {
  for (const size_t bytes : {size_t{0}, size_t{1}, (size_t{1} << 20) + 3, (size_t{20} << 20) + 7}) {
    std::vector<unsigned char> src(bytes), dst(bytes + 1, 0xAB);
    for (size_t i = 0; i < bytes; ++i) src[i] = static_cast<unsigned char>(i * 131 + i / 4099);
    ops::ParallelHostCopy(dst.data(), src.data(), bytes);
    EXPECT_TRUE(std::equal(src.begin(), src.end(), dst.begin())) << bytes;
    EXPECT_EQ(dst[bytes], 0xAB) << bytes;  // nothing past the end
  }
}

TEST(DispatchDeathTest, TensorsOnTwoDevicesAreRefused) {
  Buffer x({4}), y({4});
  // Never dereferenced: the device check comes first.
  const core::Tensor on_device(x.data.data(), {4}, core::DType::kF32, core::Device::kCuda);
  EXPECT_DEATH(ops::Add(x.t(), on_device, y.t()), "different devices");
}

}  // namespace
}  // namespace mlperf
