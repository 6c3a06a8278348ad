// Label `gpu`: every CUDA twin against its CPU twin on the same inputs, with
// per-dtype tolerances; exact where the arithmetic is exact (casts, dropout
// masks from Philox, small-integer GEMMs). Skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "reference/core/dtype.h"
#include "reference/core/philox.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/cpu/loss.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/gemm_epilogue.h"
#include "reference/kernels/cuda/linear.h"
#include "reference/kernels/cuda/softmax.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/attention.h"
#include "reference/kernels/ops/detection.h"
#include "reference/kernels/ops/loss.h"
#include "reference/kernels/ops/optimizer.h"
#include "reference/kernels/ops/softmax.h"
#include "reference/kernels/precision.h"
#include "tests/core/test_util.h"

namespace mlperf {
namespace {

using core::DType;
using core::Tensor;
using testing::Buffer;

// A device copy of a host buffer; freed at scope end (tests only).
template <typename T>
class DeviceCopy {
 public:
  explicit DeviceCopy(const std::vector<T>& host, core::Shape shape, DType dtype = DType::kF32)
      : n_(host.size()), shape_(shape), dtype_(dtype) {
    EXPECT_EQ(cudaMalloc(&ptr_, n_ * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(ptr_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceCopy() { cudaFree(ptr_); }
  Tensor t() const { return Tensor(ptr_, shape_, dtype_, core::Device::kCuda); }
  T* get() const { return static_cast<T*>(ptr_); }
  std::vector<T> ToHost() const {
    cuda::Synchronize();
    std::vector<T> out(n_);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t n_;
  core::Shape shape_;
  DType dtype_;
};

void ExpectClose(const std::vector<float>& gpu, const std::vector<float>& cpu, double tol,
                 const char* what) {
  ASSERT_EQ(gpu.size(), cpu.size()) << what;
  for (size_t i = 0; i < gpu.size(); ++i) {
    ASSERT_EQ(std::isnan(gpu[i]), std::isnan(cpu[i])) << what << " NaN mismatch at " << i;
    ASSERT_EQ(std::isinf(gpu[i]), std::isinf(cpu[i])) << what << " Inf mismatch at " << i;
    if (std::isfinite(cpu[i])) {
      ASSERT_NEAR(gpu[i], cpu[i], tol * (1.0 + std::fabs(cpu[i]))) << what << " at " << i;
    }
  }
}

class CudaTwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device; the CPU twins are tested";
  }
};

constexpr double kF32Tol = 1e-5;

// The attention layout steps: a pure permutation and exact mask adds (key
// padding, packed sequences); a head narrower than a warp and one wider, a
// partial block of tokens.
TEST_F(CudaTwinTest, AttentionHeadsAndKeyMask) {
  struct Dims {
    int64_t t, d;
  };
  for (const Dims s : {Dims{5, 4}, Dims{11, 40}}) {
    const int64_t b = 2, h = 3, t = s.t, d = s.d, width = 3 * h * d + 2;
    const std::string at = fmt::format(" (t = {}, d = {})", t, d);
    Buffer rows({b * t, width}), heads({b, h, t, d}), merged({b * t, width}), mask({b, t});
    testing::FillRandom(rows, 7);
    for (int64_t i = 0; i < b * t; ++i) mask[i] = i % 3 == 0 ? 0.0f : 1.0f;
    ops::SplitHeads(rows.t(), h * d, heads.t());
    DeviceCopy<float> grows(rows.data, rows.shape), gheads(heads.data, heads.shape);
    DeviceCopy<float> gmerged(merged.data, merged.shape);
    ops::SplitHeads(grows.t(), h * d, gheads.t());
    EXPECT_EQ(gheads.ToHost(), heads.data) << at;
    ops::MergeHeads(heads.t(), merged.t(), 2);
    ops::MergeHeads(gheads.t(), gmerged.t(), 2);
    EXPECT_EQ(gmerged.ToHost(), merged.data) << at;

    Buffer scores({b, h, t, t});
    testing::FillRandom(scores, 8);
    DeviceCopy<float> gscores(scores.data, scores.shape), gmask(mask.data, mask.shape);
    ops::AddKeyPaddingMask(scores.t(), mask.t());
    ops::AddKeyPaddingMask(gscores.t(), gmask.t());
    EXPECT_EQ(gscores.ToHost(), scores.data) << at;
    // Packed rows: sequence ids 1, 2, 3 and padding 0 (AddSequenceMask).
    for (int64_t i = 0; i < b * t; ++i) mask[i] = static_cast<float>((i % t) * 4 / t);
    DeviceCopy<float> gids(mask.data, mask.shape);
    ops::AddSequenceMask(scores.t(), mask.t());
    ops::AddSequenceMask(gscores.t(), gids.t());
    EXPECT_EQ(gscores.ToHost(), scores.data) << at << " sequence mask";
  }
}

// The attention rows' fused kernels against the ops they join, on rows that
// start inside a Philox block (t = 13) and on aligned ones (t = 16): the
// same dropout mask exactly, the same values within fp32 rounding.
TEST_F(CudaTwinTest, AttentionRowsFuseSoftmaxAndDropout) {
  for (const int64_t t : {13, 16}) {
    const int64_t b = 2, h = 3;
    const core::Shape square{b, h, t, t};
    Buffer scores(square), mask({b, t}), dattn(square), probs(square), dropped(square), g(square),
        dscores(square);
    testing::FillRandom(scores, 21, -4.0f, 4.0f);
    testing::FillRandom(dattn, 22);
    for (int64_t i = 0; i < b * t; ++i) mask[i] = i % 5 == 4 ? 0.0f : 1.0f;
    const AttentionParams p{.dropout = 0.1f, .seed = 9, .offset = 3};
    DeviceCopy<float> gscores(scores.data, square), gmask(mask.data, mask.shape),
        gprobs(probs.data, square), gdropped(dropped.data, square), gd(dattn.data, square);
    Buffer masked = scores;
    ops::AddKeyPaddingMask(masked.t(), mask.t());
    ops::SoftmaxForward(masked.t(), probs.t());
    ops::DropoutForward(p.dropout, p.seed, p.offset, probs.t(), dropped.t());
    ops::DropoutBackward(p.dropout, p.seed, p.offset, dattn.t(), g.t());
    ops::SoftmaxBackward(probs.t(), g.t(), dscores.t());

    // At t = 16 part of the offset comes from a device counter, as in BERT's
    // recorded step.
    DeviceCopy<int64_t> base(std::vector<int64_t>{2}, {1}, DType::kI64);
    AttentionParams gp = p;
    if (t == 16) {
      gp.offset = p.offset - 2;
      gp.offset_base = base.get();
    }
    cuda::MaskedSoftmax(gscores.t(), gmask.t(), gprobs.t(), gp, gdropped.t());
    cuda::DropoutSoftmaxBackward(gp, gprobs.t(), gd.t(), gd.t());  // in place
    const std::string at = fmt::format(" (t = {})", t);
    ExpectClose(gprobs.ToHost(), probs.data, kF32Tol, ("masked softmax" + at).c_str());
    const std::vector<float> kept = gdropped.ToHost();
    int64_t zeros = 0;
    for (size_t i = 0; i < kept.size(); ++i) {
      if (probs.data[i] == 0.0f) continue;  // a masked key's exp underflows
      ASSERT_EQ(kept[i] == 0.0f, dropped.data[i] == 0.0f) << "dropout mask at " << i << at;
      zeros += kept[i] == 0.0f;
    }
    EXPECT_GT(zeros, 0) << at;
    ExpectClose(kept, dropped.data, kF32Tol, ("softmax dropout" + at).c_str());
    ExpectClose(gd.ToHost(), dscores.data, kF32Tol, ("dropout softmax backward" + at).c_str());
  }
}

TEST_F(CudaTwinTest, PointwiseOps) {
  Buffer x({1000}), b({1000}), y({1000});
  testing::FillRandom(x, 1, -3.0f, 3.0f);
  testing::FillRandom(b, 2);
  DeviceCopy<float> dx(x.data, x.shape), db(b.data, b.shape), dy(y.data, y.shape);
  ops::GeluForward(x.t(), y.t());
  ops::GeluForward(dx.t(), dy.t());
  ExpectClose(dy.ToHost(), y.data, kF32Tol, "gelu");
  ops::GeluBackward(x.t(), b.t(), y.t());
  ops::GeluBackward(dx.t(), db.t(), dy.t());
  ExpectClose(dy.ToHost(), y.data, kF32Tol, "gelu backward");
  ops::TanhForward(x.t(), y.t());
  ops::TanhForward(dx.t(), dy.t());
  ExpectClose(dy.ToHost(), y.data, kF32Tol, "tanh");
  ops::TanhBackward(x.t(), b.t(), y.t());
  ops::TanhBackward(dx.t(), db.t(), dy.t());
  ExpectClose(dy.ToHost(), y.data, kF32Tol, "tanh backward");
  ops::ReluForward(x.t(), y.t());
  ops::ReluForward(dx.t(), dy.t());
  ExpectClose(dy.ToHost(), y.data, 0.0, "relu");
  ops::Add(x.t(), b.t(), y.t());
  ops::Add(dx.t(), db.t(), dy.t());
  ExpectClose(dy.ToHost(), y.data, 0.0, "add");
  // Same Philox stream, same mask: dropout agrees exactly.
  ops::DropoutForward(0.1f, 1234, 56, x.t(), y.t());
  ops::DropoutForward(0.1f, 1234, 56, dx.t(), dy.t());
  ExpectClose(dy.ToHost(), y.data, 0.0, "dropout");
  // A length that ends inside a Philox block, on other inputs: element 999
  // keeps the dropout of x above.
  const auto first_999 = [](const Tensor& t) {
    return Tensor(t.data(), {999}, t.dtype(), t.device());
  };
  ops::DropoutForward(0.1f, 1234, 56, first_999(b.t()), first_999(y.t()));
  ops::DropoutForward(0.1f, 1234, 56, first_999(db.t()), first_999(dy.t()));
  ExpectClose(dy.ToHost(), y.data, 0.0, "dropout of 999 elements");
  // The offset base counted on the device (a recorded step's counter).
  ops::DropoutForward(0.1f, 1234, 56, x.t(), y.t());
  DeviceCopy<int64_t> base(std::vector<int64_t>{40}, {1}, DType::kI64);
  ops::AddInt64(base.t(), 16);
  EXPECT_EQ(base.ToHost()[0], 56);
  ops::DropoutForward(0.1f, 1234, 0, dx.t(), dy.t(), base.get());
  ExpectClose(dy.ToHost(), y.data, 0.0, "dropout with an offset base");
  // A window of a larger tensor (a rank's rows and columns): the CPU's masks.
  std::vector<float> host_in = dx.ToHost(), host_out(1000);
  ops::DropoutWindow(0.1f, 1234, 56, Tensor(dx.t().data(), {20, 50}, DType::kF32, dx.t().device()),
                     Tensor(dy.t().data(), {20, 50}, DType::kF32, dy.t().device()), 7, 123, 33);
  ops::DropoutWindow(0.1f, 1234, 56, Tensor(host_in.data(), {20, 50}, DType::kF32),
                     Tensor(host_out.data(), {20, 50}, DType::kF32), 7, 123, 33);
  std::vector<float> device_out = dy.ToHost();
  device_out.resize(1000);
  ExpectClose(device_out, host_out, 0.0, "dropout window");
}

// The detector's ops (RetinaNet): nearest resize both ways (doubling and
// a ratio that is not whole) and the frozen batch norm's gradient.
TEST_F(CudaTwinTest, DetectionOps) {
  Buffer x({2, 3, 7, 3}), y({2, 3, 14, 7}), dy({2, 3, 14, 7}), dx({2, 3, 7, 3});
  testing::FillRandom(x, 1);
  testing::FillRandom(dy, 2);
  DeviceCopy<float> gx(x.data, x.shape), gy(y.data, y.shape), gdy(dy.data, dy.shape),
      gdx(dx.data, dx.shape);
  ops::UpsampleNearest(x.t(), y.t());
  ops::UpsampleNearest(gx.t(), gy.t());
  ExpectClose(gy.ToHost(), y.data, 0.0, "upsample nearest");
  ops::UpsampleNearestBackward(dy.t(), dx.t());
  ops::UpsampleNearestBackward(gdy.t(), gdx.t());
  ExpectClose(gdx.ToHost(), dx.data, 0.0, "upsample nearest backward");
  Buffer gamma({3}), var({3}), out({2, 3, 14, 7});
  testing::FillRandom(gamma, 3, 0.5f, 1.5f);
  testing::FillRandom(var, 4, 0.5f, 2.0f);
  DeviceCopy<float> ggamma(gamma.data, gamma.shape), gvar(var.data, var.shape),
      gout(out.data, out.shape);
  ops::FrozenBatchNormBackward(dy.t(), gamma.t(), var.t(), 1e-5f, out.t());
  ops::FrozenBatchNormBackward(gdy.t(), ggamma.t(), gvar.t(), 1e-5f, gout.t());
  ExpectClose(gout.ToHost(), out.data, kF32Tol, "frozen batch norm backward");
}

// NMS's suppression matrix, bit for bit: 300 boxes (five words a row, the
// last partial) in clusters, at two thresholds.
TEST_F(CudaTwinTest, NmsMask) {
  const int64_t n = 300, words = 5;
  std::vector<float> boxes;
  for (int64_t i = 0; i < n; ++i) {
    const float x = 30.0f * static_cast<float>(i % 6) + 6.0f * core::PhiloxUniform(9, 0, 3 * i),
                y = 25.0f * static_cast<float>(i % 4) + 6.0f * core::PhiloxUniform(9, 0, 3 * i + 1),
                w = 8.0f + 16.0f * core::PhiloxUniform(9, 0, 3 * i + 2);
    boxes.insert(boxes.end(), {x, y, x + w, y + 0.7f * w});
  }
  DeviceCopy<float> gboxes(boxes, {n, 4});
  for (const double threshold : {0.4, 0.6}) {
    std::vector<int64_t> mask(n * words);
    ops::NmsMask(Tensor(boxes.data(), core::Shape{n, 4}, DType::kF32), threshold,
                 Tensor(mask.data(), core::Shape{n, words}, DType::kI64));
    DeviceCopy<int64_t> gmask(std::vector<int64_t>(n * words, -1), {n, words}, DType::kI64);
    ops::NmsMask(gboxes.t(), threshold, gmask.t());
    EXPECT_EQ(gmask.ToHost(), mask) << "threshold " << threshold;
    int64_t set = 0;
    for (int64_t m : mask) set += m != 0;
    EXPECT_GT(set, 0);  // the boxes do overlap
  }
}

TEST_F(CudaTwinTest, CastsRoundLikeTheHostConversions) {
  std::vector<float> x(4096);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::ldexp(core::PhiloxUniform(3, 0, i) - 0.5f, static_cast<int>(i % 40) - 25);
  x[0] = INFINITY;
  x[1] = NAN;
  x[2] = 70000.0f;  // overflows fp16
  DeviceCopy<float> dx(x, {4096});
  for (DType t : {DType::kBF16, DType::kF16}) {
    DeviceCopy<uint16_t> dh(std::vector<uint16_t>(4096), {4096}, t);
    ops::Cast(dx.t(), dh.t());
    const std::vector<uint16_t> got = dh.ToHost();
    for (size_t i = 0; i < x.size(); ++i) {
      const uint16_t want = t == DType::kBF16 ? core::FloatToBf16(x[i]) : core::FloatToHalf(x[i]);
      if (std::isnan(x[i])) continue;  // NaN payloads may differ
      ASSERT_EQ(got[i], want) << "element " << i << " value " << x[i];
    }
  }
}

// The mixed-precision rounding points (kernels/precision.h): the rounding
// bit for bit, the device-side loss scale, and a linear layer through ops::
// under bf16 and fp16 on both backends.
TEST_F(CudaTwinTest, MixedPrecisionRoundsLikeTheCpu) {
  std::vector<float> x(4096);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::ldexp(core::PhiloxUniform(4, 0, i) - 0.5f, static_cast<int>(i % 40) - 25);
  x[0] = INFINITY;
  x[1] = 70000.0f;
  DeviceCopy<float> dx(x, {4096}), dy(std::vector<float>(4096), {4096});
  for (DType t : {DType::kBF16, DType::kF16}) {
    Buffer host({4096});
    host.data = x;
    cpu::RoundToPrecision(t, host.t(), host.t());
    cuda::RoundToPrecision(t, dx.t(), dy.t());
    const std::vector<float> got = dy.ToHost();
    for (size_t i = 0; i < x.size(); ++i)
      ASSERT_EQ(core::FloatBits(got[i]), core::FloatBits(host.data[i])) << "element " << i;
  }
  const float scale = 256.0f;
  DeviceCopy<float> dscale({scale}, {1});
  ops::ScaleBy(dx.t(), dscale.get());
  const std::vector<float> scaled = dx.ToHost();
  for (size_t i = 2; i < x.size(); ++i) ASSERT_EQ(scaled[i], x[i] * scale) << i;

  Buffer in({9, 40}), w({6, 40}), b({6}), y({9, 6});
  testing::FillRandom(in, 10);
  testing::FillRandom(w, 11);
  testing::FillRandom(b, 12);
  DeviceCopy<float> gin(in.data, in.shape), gw(w.data, w.shape), gb(b.data, b.shape),
      gy(y.data, y.shape);
  for (DType t : {DType::kBF16, DType::kF16}) {
    const ops::PrecisionScope scope(t);
    ops::LinearForward(in.t(), w.t(), b.t(), y.t());
    ops::LinearForward(gin.t(), gw.t(), gb.t(), gy.t());
    // Both round the same inputs; fp32 sums in another order may round the
    // output one unit of the precision apart.
    ExpectClose(gy.ToHost(), y.data, t == DType::kBF16 ? 8e-3 : 1e-3, "linear, reduced precision");
  }
}

// BERT's evaluation shape (rows of 30522) with ties and NaN: the same index.
TEST_F(CudaTwinTest, ArgmaxRowsMatchesTheCpu) {
  const int64_t rows = 5, vocab = 30522;
  Buffer logits({rows, vocab});
  testing::FillRandom(logits, 13, -4.0f, 4.0f);
  logits[1 * vocab + 100] = logits[1 * vocab + 29000] = 20.0f;  // a tie across threads
  logits[2 * vocab + 0] = NAN;
  for (int64_t j = 0; j < vocab; ++j) logits[3 * vocab + j] = NAN;
  testing::IntBuffer cpu_out({rows});
  ops::ArgmaxRows(logits.t(), cpu_out.t());
  DeviceCopy<float> gl(logits.data, logits.shape);
  DeviceCopy<int32_t> gout(std::vector<int32_t>(rows), {rows}, DType::kI32);
  ops::ArgmaxRows(gl.t(), gout.t());
  EXPECT_EQ(gout.ToHost(), cpu_out.data);
  EXPECT_EQ(cpu_out.data[1], 100);
}

TEST_F(CudaTwinTest, SoftmaxAndGemm) {
  Buffer x({7, 300}), y({7, 300}), dy({7, 300}), dx({7, 300});
  testing::FillRandom(x, 4, -8.0f, 8.0f);
  testing::FillRandom(dy, 5);
  DeviceCopy<float> gx(x.data, x.shape), gy(y.data, y.shape), gdy(dy.data, dy.shape),
      gdx(dx.data, dx.shape);
  ops::SoftmaxForward(x.t(), y.t());
  ops::SoftmaxForward(gx.t(), gy.t());
  ExpectClose(gy.ToHost(), y.data, kF32Tol, "softmax");
  ops::SoftmaxBackward(y.t(), dy.t(), dx.t());
  ops::SoftmaxBackward(gy.t(), gdy.t(), gdx.t());
  ExpectClose(gdx.ToHost(), dx.data, kF32Tol, "softmax backward");
  // Small integers: every product and sum is exact in fp32, so GEMM must agree
  // bit for bit in all four transpose combinations.
  const int64_t m = 33, n = 17, k = 29;
  Buffer a({m * k}), b({k * n}), c({m * n});
  for (int64_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  for (int64_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>(i % 5) - 2);
  DeviceCopy<float> ga(a.data, a.shape), gb(b.data, b.shape), gc(c.data, c.shape);
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      cpu::Gemm(ta, tb, m, n, k, 1.0f, a.data.data(), b.data.data(), 0.0f, c.data.data());
      cuda::Gemm(ta, tb, m, n, k, 1.0f, ga.get(), gb.get(), 0.0f, gc.get());
      ExpectClose(gc.ToHost(), c.data, 0.0, "gemm");
    }
}

// The cuBLASLt path (the bias added in the GEMM's epilogue, its gradient
// reduced in the weight gradient's) and the unfused kernels, each against
// the CPU: a small shape, shapes with several row chunks of the unfused bias
// gradient, and inputs one float off alignment (cuBLASLt declines them).
TEST_F(CudaTwinTest, LinearForwardAndBackward) {
  struct Shape {
    int64_t rows, in, out, misalign;
  };
  for (const Shape& s :
       {Shape{9, 12, 5, 0}, Shape{1000, 64, 48, 0}, Shape{300, 33, 17, 0}, Shape{40, 16, 8, 1}}) {
    Buffer x({s.rows * s.in + s.misalign}), w({s.out, s.in}), b({s.out}), y({s.rows, s.out}),
        dy({s.rows, s.out}), dx({s.rows, s.in}), dw({s.out, s.in}), db({s.out});
    testing::FillRandom(x, 6);
    testing::FillRandom(w, 7);
    testing::FillRandom(b, 8);
    testing::FillRandom(dy, 9);
    const core::Tensor xs(x.data.data() + s.misalign, {s.rows, s.in}, DType::kF32);
    cpu::LinearForward(xs, w.t(), b.t(), y.t());
    cpu::LinearBackward(xs, w.t(), dy.t(), dx.t(), dw.t(), db.t());
    for (bool fused : {true, false}) {
      cuda::SetGemmEpilogues(fused);
      DeviceCopy<float> gx(x.data, x.shape), gw(w.data, w.shape), gb(b.data, b.shape),
          gy(y.data, y.shape), gdy(dy.data, dy.shape), gdx(dx.data, dx.shape),
          gdw(dw.data, dw.shape), gdb(db.data, db.shape);
      const core::Tensor gxs(gx.get() + s.misalign, {s.rows, s.in}, DType::kF32,
                             core::Device::kCuda);
      const std::string what = fmt::format("linear {}x{}x{} (fused {}, misaligned {})", s.rows,
                                           s.in, s.out, fused, s.misalign);
      cuda::LinearForward(gxs, gw.t(), gb.t(), gy.t());
      ExpectClose(gy.ToHost(), y.data, kF32Tol, (what + " y").c_str());
      cuda::LinearBackward(gxs, gw.t(), gdy.t(), gdx.t(), gdw.t(), gdb.t());
      ExpectClose(gdx.ToHost(), dx.data, kF32Tol, (what + " dx").c_str());
      // dw and db sum over the rows, in another order than the CPU's: the
      // fp32 rounding error grows like the square root of the count (1000
      // rows differed by 1.35e-5 at 0.29 on an H200).
      const double sum_tol = kF32Tol * std::max(1.0, std::sqrt(s.rows / 100.0));
      ExpectClose(gdw.ToHost(), dw.data, sum_tol, (what + " dw").c_str());
      ExpectClose(gdb.ToHost(), db.data, sum_tol, (what + " db").c_str());
    }
  }
  cuda::SetGemmEpilogues(true);
}

// More rows than 65535 chunks of 256 (a batch-8 3D U-Net's 128^3 output
// layer has 16.8M): the chunks grow instead of the grid. Columns of 0s and
// 1s keep every partial sum an exact integer, so a row counted twice or
// left out shows: every fourth row, every seventh, and only the last 1001.
TEST_F(CudaTwinTest, BiasGradientGrowsItsChunksPastTheGridLimit) {
  const int64_t rows = int64_t{65535} * 256 + 1001, out = 3;
  std::vector<float> dy(static_cast<size_t>(rows * out));
  float expected[out] = {0.0f, 0.0f, 0.0f};
  for (int64_t r = 0; r < rows; ++r) {
    const bool ones[out] = {r % 4 == 0, r % 7 == 3, r >= rows - 1001};
    for (int64_t o = 0; o < out; ++o) {
      dy[r * out + o] = ones[o] ? 1.0f : 0.0f;
      expected[o] += ones[o] ? 1.0f : 0.0f;  // below 2^24: exact
    }
  }
  DeviceCopy<float> gdy(dy, {rows, out}), gdb(std::vector<float>(out), {out});
  cuda::BiasGradient(gdy.t(), gdb.get(), rows, out);
  const std::vector<float> db = gdb.ToHost();
  for (int64_t o = 0; o < out; ++o) EXPECT_EQ(db[o], expected[o]) << "column " << o;
}

// A channels-first convolution's bias gradient over large planes (many parts
// per plane), exact 0/1 sums per channel: every third voxel, every fifth
// sample-and-voxel pair, and only each plane's last 777.
TEST_F(CudaTwinTest, ChannelsFirstBiasGradientSumsPlanesInParts) {
  const int64_t n = 2, c = 3, d = 10, hw = 100, spatial = d * hw * hw;
  std::vector<float> dy(static_cast<size_t>(n * c * spatial));
  float expected[c] = {0.0f, 0.0f, 0.0f};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t s = 0; s < spatial; ++s) {
        const bool one = ch == 0   ? s % 3 == 0
                         : ch == 1 ? (i * spatial + s) % 5 == 0
                                   : s >= spatial - 777;
        dy[(i * c + ch) * spatial + s] = one ? 1.0f : 0.0f;
        expected[ch] += one ? 1.0f : 0.0f;
      }
  DeviceCopy<float> gdy(dy, {n, c, d, hw, hw}), gdb(std::vector<float>(c), {c});
  const Tensor tagged = gdy.t().Reshaped({n, c, d, hw, hw}, core::Layout::kNCDHW);
  cuda::BiasBackwardChannels(tagged, gdb.t());
  const std::vector<float> db = gdb.ToHost();
  for (int64_t ch = 0; ch < c; ++ch) EXPECT_EQ(db[ch], expected[ch]) << "channel " << ch;
}

TEST_F(CudaTwinTest, FusedOptimizersMatchTheCpuSteps) {
  // Two tensors, one spanning several chunks, plus an excluded bias. From
  // the second step on, the device reads its rate from device memory
  // (lr_at, as a recorded step does) while `lr` holds a wrong one.
  const int64_t n = 10000 + 37;
  const TensorSlice slices[] = {{0, 10000, false}, {10000, 37, true, true}};
  Buffer w({n}), g({n});
  testing::FillRandom(w, 10);
  testing::FillRandom(g, 11, -0.1f, 0.1f);
  const float rates[4][3] = {
      {0.1f, 0.05f, 0.2f}, {5.0f, 2.5f, 7.0f}, {1e-3f, 2e-3f, 5e-4f}, {1e-3f, 2e-3f, 5e-4f}};
  for (int which = 0; which < 4; ++which) {
    std::vector<float> cw = w.data, cs1(n, 0.0f), cs2(n, 0.0f);
    DeviceCopy<float> gw(cw, w.shape), gg(g.data, g.shape), gs1(cs1, w.shape), gs2(cs2, w.shape);
    int32_t cstep = 0;
    DeviceCopy<int32_t> gstep(std::vector<int32_t>{0}, {1}, DType::kI32);
    for (int step = 0; step < 3; ++step) {
      const float lr = rates[which][step];
      DeviceCopy<float> rate(std::vector<float>{lr}, {1});
      const float device_lr = step == 0 ? lr : 1e9f;
      const float* lr_at = step == 0 ? nullptr : rate.get();
      if (which == 0) {
        const SgdParams p{.lr = lr, .momentum = 0.9f, .weight_decay = 1e-4f, .nesterov = true};
        SgdParams d = p;
        d.lr = device_lr;
        d.lr_at = lr_at;
        ops::SgdStep(core::Device::kCpu, p, slices, cw.data(), g.data.data(), cs1.data(), nullptr);
        ops::SgdStep(core::Device::kCuda, d, slices, gw.get(), gg.get(), gs1.get(), nullptr);
      } else if (which == 1) {
        const LarsParams p{.lr = lr, .momentum = 0.9f, .weight_decay = 5e-5f};
        LarsParams d = p;
        d.lr = device_lr;
        d.lr_at = lr_at;
        ops::LarsStep(core::Device::kCpu, p, slices, cw.data(), g.data.data(), cs1.data(), nullptr);
        ops::LarsStep(core::Device::kCuda, d, slices, gw.get(), gg.get(), gs1.get(), nullptr);
      } else if (which == 2) {
        const LambParams p{.lr = lr};
        LambParams d = p;
        d.lr = device_lr;
        d.lr_at = lr_at;
        ops::LambStep(core::Device::kCpu, p, slices, cw.data(), g.data.data(), cs1.data(),
                      cs2.data(), &cstep, nullptr);
        ops::LambStep(core::Device::kCuda, d, slices, gw.get(), gg.get(), gs1.get(), gs2.get(),
                      gstep.get(), nullptr);
      } else {
        // The LLMs' AdamW, the global-norm clip active (the norm is about 5.8).
        const AdamParams p{.lr = lr, .beta2 = 0.95f, .weight_decay = 0.1f, .max_grad_norm = 1.0f};
        AdamParams d = p;
        d.lr = device_lr;
        d.lr_at = lr_at;
        ops::AdamStep(core::Device::kCpu, p, slices, cw.data(), g.data.data(), cs1.data(),
                      cs2.data(), &cstep, nullptr);
        ops::AdamStep(core::Device::kCuda, d, slices, gw.get(), gg.get(), gs1.get(), gs2.get(),
                      gstep.get(), nullptr);
      }
      cuda::Synchronize();  // `rate` is freed at the end of the iteration
    }
    const char* names[] = {"sgd", "lars", "lamb", "adamw"};
    ExpectClose(gw.ToHost(), cw, 1e-5, names[which]);
    if (which >= 2) {
      EXPECT_EQ(gstep.ToHost()[0], 3);
    }
  }
}

// LARS and LAMB reduce their norms in a fixed order, so two runs of the
// same steps give the same bits (a recorded step and a seeded run rely on
// it), and a slice of more chunks than a block has threads sums right.
TEST_F(CudaTwinTest, FusedOptimizerStepsAreReproducibleBitwise) {
  const int64_t big = 300 * 4096 + 5, n = big + 1000 + 7;
  const TensorSlice slices[] = {{0, big, false}, {big, 1000, false}, {big + 1000, 7, true, true}};
  Buffer w({n}), g({n});
  testing::FillRandom(w, 12);
  testing::FillRandom(g, 13, -0.1f, 0.1f);
  for (const bool lamb : {false, true}) {
    std::vector<float> cw = w.data, cs1(n, 0.0f), cs2(n, 0.0f);
    int32_t cstep = 0;
    const LarsParams lars{.lr = 0.5f, .momentum = 0.9f, .weight_decay = 5e-5f};
    const LambParams lamb_params{.lr = 1e-3f};
    std::vector<float> runs[2];
    for (std::vector<float>& result : runs) {
      DeviceCopy<float> gw(w.data, w.shape), gg(g.data, g.shape);
      DeviceCopy<float> gs1(std::vector<float>(n, 0.0f), w.shape),
          gs2(std::vector<float>(n, 0.0f), w.shape);
      DeviceCopy<int32_t> gstep(std::vector<int32_t>{0}, {1}, DType::kI32);
      for (int step = 0; step < 3; ++step) {
        if (lamb) {
          ops::LambStep(core::Device::kCuda, lamb_params, slices, gw.get(), gg.get(), gs1.get(),
                        gs2.get(), gstep.get(), nullptr);
        } else {
          ops::LarsStep(core::Device::kCuda, lars, slices, gw.get(), gg.get(), gs1.get(), nullptr);
        }
      }
      result = gw.ToHost();
    }
    for (int step = 0; step < 3; ++step) {
      if (lamb) {
        ops::LambStep(core::Device::kCpu, lamb_params, slices, cw.data(), g.data.data(), cs1.data(),
                      cs2.data(), &cstep, nullptr);
      } else {
        ops::LarsStep(core::Device::kCpu, lars, slices, cw.data(), g.data.data(), cs1.data(),
                      nullptr);
      }
    }
    const char* what = lamb ? "lamb" : "lars";
    EXPECT_TRUE(runs[0] == runs[1]) << what << ": two runs differ";
    ExpectClose(runs[0], cw, 1e-5, what);
  }
}

TEST_F(CudaTwinTest, LossScalerRunsWithoutTheHost) {
  std::vector<float> g = {1024.0f, INFINITY, 2.0f};
  DeviceCopy<float> gg(g, {3}), scale(std::vector<float>{1024.0f}, {1}),
      found(std::vector<float>{0.0f}, {1}), w(std::vector<float>{1.0f}, {1}),
      buf(std::vector<float>{0.0f}, {1});
  DeviceCopy<int32_t> tracker(std::vector<int32_t>{0}, {1}, DType::kI32);
  const TensorSlice slice{0, 1, false};
  ops::UnscaleAndCheckFinite(core::Device::kCuda, gg.get(), 3, scale.get(), found.get());
  ops::SgdStep(core::Device::kCuda, {.lr = 0.1f}, {&slice, 1}, w.get(), gg.get(), buf.get(),
               found.get());
  ops::UpdateLossScale(core::Device::kCuda, {.growth_interval = 2}, scale.get(), tracker.get(),
                       found.get());
  EXPECT_EQ(found.ToHost()[0], 1.0f);
  EXPECT_EQ(w.ToHost()[0], 1.0f);  // skipped on the device
  EXPECT_EQ(scale.ToHost()[0], 512.0f);
  EXPECT_EQ(tracker.ToHost()[0], 0);
}

}  // namespace
}  // namespace mlperf
