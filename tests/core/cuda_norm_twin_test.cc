// Label `gpu`: the CUDA batch and instance norms against their CPU twins on
// Philox inputs (rounded to the dtype first, so that only the order of the
// sums and the output rounding differ): channels-first through cuDNN,
// channels-last through the own kernels of cuda/norm_channels_last and,
// for comparison, through cuDNN. The shapes include channel counts that are
// not a multiple of a warp and enough rows for many partial sums per
// channel. Skips without a CUDA device.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/norm.h"
#include "reference/kernels/cuda/norm.h"
#include "reference/kernels/cuda/norm_channels_last.h"
#include "reference/kernels/dispatch.h"
#include "tests/core/cuda_twin_util.h"

namespace mlperf {
namespace {

using namespace twin;  // NOLINT: the shared helpers of the twin tests

struct NormShape {
  int64_t n, c, h, w;
  int64_t total() const { return n * c * h * w; }
};

// Parameter: what channels-last tensors take: cuDNN's batch norm, the own
// kernels, or the own kernels' wide variant (16 bytes of channels a thread
// where the channel count is a multiple of 8).
enum Kernels { kCudnn, kOwn, kOwnWide };

class CudaNormTwinTest : public ::testing::TestWithParam<Kernels> {
 protected:
  void SetUp() override {
    if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device; the CPU twins are tested";
    cuda::SetChannelsLastNormKernels(GetParam() != kCudnn);
    cuda::SetWideNormKernels(GetParam() == kOwnWide);
  }
  void TearDown() override {
    cuda::SetChannelsLastNormKernels(own_);
    cuda::SetWideNormKernels(wide_);
  }

 private:
  const bool own_ = cuda::ChannelsLastNormKernels();
  const bool wide_ = cuda::WideNormKernels();
};

// Training, inference and backward of the plain batch norm in one dtype and
// layout; with the own kernels, a second run gives the same bits.
void CheckBatchNorm(const NormShape& s, DType dtype, bool cl) {
  const int64_t n = s.n, c = s.c, h = s.h, w = s.w, total = s.total();
  const std::string what = std::string("batch norm ") + Name(dtype) + (cl ? " nhwc " : " nchw ") +
                           std::to_string(n) + "x" + std::to_string(c) + "x" + std::to_string(h) +
                           "x" + std::to_string(w);
  const cpu::BatchNormParams p{.epsilon = 1e-5f, .momentum = 0.1f};
  Floats x = Rounded(Random(total, 8, -2.0f, 3.0f), dtype), dy = Rounded(Random(total, 9), dtype);
  Floats gamma = Random(c, 10, 0.5f, 1.5f), beta = Random(c, 11);
  Floats y(total), mean(c), istd(c), rm(c, 0.5f), rv(c, 2.0f), yi(total), dx(total), dg(c), db(c);
  const Shape shape{n, c, h, w};
  cpu::BatchNormForwardTraining(p, Host(x, shape), Host(gamma, {c}), Host(beta, {c}),
                                Host(y, shape), Host(mean, {c}), Host(istd, {c}), Host(rm, {c}),
                                Host(rv, {c}));
  cpu::BatchNormForwardInference(p, Host(x, shape), Host(gamma, {c}), Host(beta, {c}),
                                 Host(rm, {c}), Host(rv, {c}), Host(yi, shape));
  cpu::BatchNormBackward(Host(x, shape), Host(dy, shape), Host(gamma, {c}), Host(mean, {c}),
                         Host(istd, {c}), Host(dx, shape), Host(dg, {c}), Host(db, {c}));
  const Shape gshape = cl ? Shape{n, h, w, c} : shape;
  const Layout layout = cl ? Layout::kNHWC : Layout::kNCHW;
  auto put = [&](const Floats& v) {
    return std::make_unique<Dev>(cl ? ToChannelsLast(v, n, c) : v, gshape, dtype, layout);
  };
  auto get = [&](const Dev& d) { return cl ? FromChannelsLast(d.Get(), n, c) : d.Get(); };
  auto gx = put(x), gdy = put(dy), gy = put(Floats(total)), gyi = put(Floats(total)),
       gdx = put(Floats(total));
  Dev ggamma(gamma, {c}), gbeta(beta, {c}), gmean(Floats(c), {c}), gistd(Floats(c), {c}),
      grm(Floats(c, 0.5f), {c}), grv(Floats(c, 2.0f), {c}), gdg(Floats(c), {c}),
      gdb(Floats(c), {c});
  auto run = [&] {
    cuda::BatchNormForwardTraining(p, gx->t(), ggamma.t(), gbeta.t(), gy->t(), gmean.t(), gistd.t(),
                                   grm.t(), grv.t());
    cuda::BatchNormForwardInference(p, gx->t(), ggamma.t(), gbeta.t(), grm.t(), grv.t(), gyi->t());
    cuda::BatchNormBackward(gx->t(), gdy->t(), ggamma.t(), gmean.t(), gistd.t(), gdx->t(), gdg.t(),
                            gdb.t());
  };
  run();
  const double tol = Tolerance(dtype);
  const Floats first_y = gy->Get(), first_dx = gdx->Get(), first_dg = gdg.Get();
  ExpectClose(get(*gy), y, tol, what + " y");
  ExpectClose(gmean.Get(), mean, 1e-4, what + " saved mean");
  ExpectClose(gistd.Get(), istd, 1e-4, what + " saved inv std");
  // Running variance: unbiased, weight `momentum` on the batch value.
  ExpectClose(grm.Get(), rm, 1e-4, what + " running mean");
  ExpectClose(grv.Get(), rv, 1e-4, what + " running var");
  ExpectClose(get(*gyi), yi, tol, what + " inference y");
  ExpectClose(get(*gdx), dx, tol, what + " dx");
  ExpectClose(gdg.Get(), dg, 1e-3, what + " dgamma");
  ExpectClose(gdb.Get(), db, 1e-3, what + " dbeta");
  if (!cl || !cuda::ChannelsLastNormKernels()) return;
  run();  // the running statistics move on; the batch's results must not
  EXPECT_EQ(gy->Get(), first_y) << what << ": y differs between two runs";
  EXPECT_EQ(gdx->Get(), first_dx) << what << ": dx differs between two runs";
  EXPECT_EQ(gdg.Get(), first_dg) << what << ": dgamma differs between two runs";
}

TEST_P(CudaNormTwinTest, BatchNormTrainingInferenceBackward) {
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16})
    for (bool cl : {false, true}) {
      CheckBatchNorm({4, 6, 5, 5}, dtype, cl);
      // 70 channels: a warp and a part (of pairs, in bf16/fp16); 3,136
      // rows: many partial sums. 35: an odd count, one channel a thread.
      CheckBatchNorm({16, 70, 14, 14}, dtype, cl);
      CheckBatchNorm({8, 35, 9, 9}, dtype, cl);
      // Multiples of 8 (the wide kernels' 16 bytes): 32 channels on eight
      // rows a warp, 64 and 40 on four, 128 on two, 264 a warp and a part
      // on one.
      CheckBatchNorm({16, 32, 14, 14}, dtype, cl);
      CheckBatchNorm({16, 64, 14, 14}, dtype, cl);
      CheckBatchNorm({8, 40, 9, 9}, dtype, cl);
      CheckBatchNorm({8, 128, 9, 9}, dtype, cl);
      CheckBatchNorm({4, 264, 7, 7}, dtype, cl);
    }
  // A large mean against a small spread: the shifted sums must not cancel.
  const int64_t n = 8, c = 40, total = n * c * 9 * 9;
  Floats x = Random(total, 30, 999.0f, 1001.0f), gamma(c, 1.0f), beta(c, 0.0f);
  Floats y(total), mean(c), istd(c), rm(c), rv(c);
  const Shape shape{n, c, 9, 9};
  cpu::BatchNormForwardTraining({}, Host(x, shape), Host(gamma, {c}), Host(beta, {c}),
                                Host(y, shape), Host(mean, {c}), Host(istd, {c}), Host(rm, {c}),
                                Host(rv, {c}));
  const Shape last{n, 9, 9, c};
  Dev gx(ToChannelsLast(x, n, c), last, DType::kF32, Layout::kNHWC),
      gy(Floats(total), last, DType::kF32, Layout::kNHWC), ggamma(gamma, {c}), gbeta(beta, {c}),
      gmean(Floats(c), {c}), gistd(Floats(c), {c}), grm(Floats(c), {c}), grv(Floats(c), {c});
  cuda::BatchNormForwardTraining({}, gx.t(), ggamma.t(), gbeta.t(), gy.t(), gmean.t(), gistd.t(),
                                 grm.t(), grv.t());
  ExpectClose(gistd.Get(), istd, 1e-3, "batch norm around 1000: inv std");
  ExpectClose(FromChannelsLast(gy.Get(), n, c), y, 1e-3, "batch norm around 1000: y");
}

// The fused batch norm + residual add + ReLU and its backward, which also
// leaves the masked gradient in dy; the backward once more with an addend.
void CheckFusedBatchNorm(const NormShape& s, DType dtype, bool cl) {
  const int64_t n = s.n, c = s.c, h = s.h, w = s.w, total = s.total();
  const std::string what = std::string("fused batch norm ") + Name(dtype) +
                           (cl ? " nhwc c=" : " nchw c=") + std::to_string(c);
  const cpu::BatchNormParams p{.epsilon = 1e-5f, .momentum = 0.1f};
  const Shape shape = cl ? Shape{n, h, w, c} : Shape{n, c, h, w};
  const Layout layout = cl ? Layout::kNHWC : Layout::kNCHW;
  Floats x = Rounded(Random(total, 18, -2.0f, 3.0f), dtype),
         res = Rounded(Random(total, 19), dtype), dy = Rounded(Random(total, 20), dtype);
  Floats gamma = Random(c, 21, 0.5f, 1.5f), beta = Random(c, 22);
  Floats y(total), yi(total), mean(c), istd(c), rm(c, 0.5f), rv(c, 2.0f), dx(total), dg(c), db(c);
  Dev gx(x, shape, dtype, layout), gres(res, shape, dtype, layout), gdy(dy, shape, dtype, layout),
      gy(Floats(total), shape, dtype, layout), gyi(Floats(total), shape, dtype, layout),
      gdx(Floats(total), shape, dtype, layout);
  Dev ggamma(gamma, {c}), gbeta(beta, {c}), gmean(Floats(c), {c}), gistd(Floats(c), {c}),
      grm(rm, {c}), grv(rv, {c}), gdg(Floats(c), {c}), gdb(Floats(c), {c});
  auto host = [&](Floats& v) {
    return Tensor(v.data(), shape, DType::kF32, core::Device::kCpu, layout);
  };
  cpu::BatchNormActForwardTraining(p, true, host(x), host(res), Host(gamma, {c}), Host(beta, {c}),
                                   host(y), Host(mean, {c}), Host(istd, {c}), Host(rm, {c}),
                                   Host(rv, {c}));
  cpu::BatchNormActForwardInference(p, true, host(x), host(res), Host(gamma, {c}), Host(beta, {c}),
                                    Host(rm, {c}), Host(rv, {c}), host(yi));
  cuda::BatchNormActForwardTraining(p, true, gx.t(), gres.t(), ggamma.t(), gbeta.t(), gy.t(),
                                    gmean.t(), gistd.t(), grm.t(), grv.t());
  cuda::BatchNormActForwardInference(p, true, gx.t(), gres.t(), ggamma.t(), gbeta.t(), grm.t(),
                                     grv.t(), gyi.t());
  cuda::BatchNormActBackward(true, gx.t(), gy.t(), gdy.t(), ggamma.t(), gmean.t(), gistd.t(),
                             gdx.t(), gdg.t(), gdb.t());
  const double tol = Tolerance(dtype);
  ExpectClose(gy.Get(), y, tol, what + " y");
  ExpectClose(gyi.Get(), yi, tol, what + " inference y");
  ExpectClose(grv.Get(), rv, 1e-4, what + " running var");
  // The backward on the GPU's y, whose sign carries the ReLU mask: in bf16
  // and fp16 the normalized x is rounded before the residual is added (as
  // in cuDNN), so a y within a unit of zero may fall on the other side of
  // it than the CPU's unrounded one, and the mask with it.
  Floats y_gpu = gy.Get();
  cpu::BatchNormActBackward(true, host(x), host(y_gpu), host(dy), Host(gamma, {c}), Host(mean, {c}),
                            Host(istd, {c}), host(dx), Host(dg, {c}), Host(db, {c}));
  const Floats masked = gdy.Get();
  int off = 0;
  for (int64_t i = 0; i < total; ++i)
    if (masked[i] != dy[i] && ++off <= 5)
      ADD_FAILURE() << what << " masked dy at " << i << ": gpu " << masked[i] << " cpu " << dy[i];
  EXPECT_EQ(off, 0) << what;
  ExpectClose(gdx.Get(), dx, tol, what + " dx");
  ExpectClose(gdg.Get(), dg, 1e-3, what + " dgamma");
  ExpectClose(gdb.Get(), db, 1e-3, what + " dbeta");

  // With an addend (ResNet's next block's second branch): dy + addend,
  // rounded to the dtype once, then masked; dy is left holding it.
  // (dy itself was masked in place by the CPU backward above.)
  const Floats dy0 = Rounded(Random(total, 20), dtype), addend = Rounded(Random(total, 23), dtype);
  Floats sum(total);
  for (int64_t i = 0; i < total; ++i) sum[i] = dy0[i] + addend[i];
  sum = Rounded(sum, dtype);
  Dev gdy2(dy0, shape, dtype, layout), gadd(addend, shape, dtype, layout),
      gdx2(Floats(total), shape, dtype, layout), gdg2(Floats(c), {c}), gdb2(Floats(c), {c});
  cuda::BatchNormActBackward(true, gx.t(), gy.t(), gdy2.t(), ggamma.t(), gmean.t(), gistd.t(),
                             gdx2.t(), gdg2.t(), gdb2.t(), gadd.t());
  Floats dx2(total), dg2(c), db2(c);
  cpu::BatchNormActBackward(true, host(x), host(y_gpu), host(sum), Host(gamma, {c}),
                            Host(mean, {c}), Host(istd, {c}), host(dx2), Host(dg2, {c}),
                            Host(db2, {c}));
  EXPECT_EQ(gdy2.Get(), sum) << what << " masked dy + addend";
  ExpectClose(gdx2.Get(), dx2, tol, what + " dx with an addend");
  ExpectClose(gdg2.Get(), dg2, 1e-3, what + " dgamma with an addend");
  ExpectClose(gdb2.Get(), db2, 1e-3, what + " dbeta with an addend");

  // With the ReLU's mask as bits (written and read by the channels-last
  // kernels only, ignored elsewhere): the same y, and a backward reading
  // the bits gives what the one reading y gave, bit for bit.
  const int64_t per_row = (c + 31) / 32, words = total / c * per_row;
  Dev gmask(std::vector<int32_t>(words, 0), {words}), gym(Floats(total), shape, dtype, layout),
      gdym(dy0, shape, dtype, layout), gdxm(Floats(total), shape, dtype, layout),
      gmean3(Floats(c), {c}), gistd3(Floats(c), {c}), grm3(Floats(c, 0.5f), {c}),
      grv3(Floats(c, 2.0f), {c}), gdg3(Floats(c), {c}), gdb3(Floats(c), {c});
  cuda::BatchNormActForwardTraining(p, true, gx.t(), gres.t(), ggamma.t(), gbeta.t(), gym.t(),
                                    gmean3.t(), gistd3.t(), grm3.t(), grv3.t(), gmask.t());
  cuda::BatchNormActBackward(true, gx.t(), gym.t(), gdym.t(), ggamma.t(), gmean3.t(), gistd3.t(),
                             gdxm.t(), gdg3.t(), gdb3.t(), Tensor(), gmask.t());
  // Bit for bit where the own kernels run (run to run, they are); cuDNN's
  // batch norm is not documented to be reproducible.
  const bool own = cl && cuda::ChannelsLastNormKernels();
  const auto same = [&](const Floats& got, const Floats& want, const std::string& label) {
    if (own) {
      EXPECT_EQ(got, want) << what << label;
    } else {
      ExpectClose(got, want, tol, what + label);
    }
  };
  same(gym.Get(), y_gpu, " y with the mask");
  same(gdym.Get(), masked, " masked dy from the bits");
  same(gdxm.Get(), gdx.Get(), " dx from the bits");
  same(gdg3.Get(), gdg.Get(), " dgamma from the bits");
  if (own) {
    const std::vector<uint32_t> bits = gmask.Words();
    int wrong = 0;
    for (int64_t e = 0; e < total; ++e) {
      const int64_t row = e / c, ch = e % c;
      const bool on = (bits[row * per_row + ch / 32] >> (ch % 32)) & 1u;
      if (on != (y_gpu[e] > 0.0f) && ++wrong <= 5)
        ADD_FAILURE() << what << " mask bit of element " << e << ": " << on << ", y " << y_gpu[e];
    }
    EXPECT_EQ(wrong, 0) << what;
  }
}

TEST_P(CudaNormTwinTest, BatchNormActFusedWithResidualAndRelu) {
  for (bool cl : {false, true}) {
    CheckFusedBatchNorm({4, 6, 5, 5}, DType::kF32, cl);
    for (DType dtype : {DType::kF32, DType::kBF16, DType::kF16}) {
      CheckFusedBatchNorm({16, 70, 14, 14}, dtype, cl);
      CheckFusedBatchNorm({16, 64, 14, 14}, dtype, cl);
      CheckFusedBatchNorm({4, 264, 7, 7}, dtype, cl);
    }
  }
}

// Instance norm, channels-last against the CPU's channels-first results:
// N groups of spatial rows each; then with the ReLU fused. 40 and 32
// channels (3D U-Net's top level; the wide kernels' eight rows a warp).
void CheckChannelsLastInstanceNorm(int64_t c) {
  const int64_t n = 3, d = 6, h = 7, w = 8, total = n * c * d * h * w;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    const std::string what =
        std::string("instance norm ndhwc ") + Name(dtype) + " " + std::to_string(c);
    Floats x = Rounded(Random(total, 40, -2.0f, 2.0f), dtype),
           dy = Rounded(Random(total, 41), dtype);
    Floats gamma = Random(c, 42, 0.5f, 1.5f), beta = Random(c, 43);
    Floats y(total), mean(n * c), istd(n * c), dx(total), dg(c), db(c);
    const Shape shape{n, c, d, h, w}, last{n, d, h, w, c};
    cpu::InstanceNormForward(1e-5f, Host(x, shape), Host(gamma, {c}), Host(beta, {c}),
                             Host(y, shape), Host(mean, {n * c}), Host(istd, {n * c}));
    cpu::InstanceNormBackward(Host(x, shape), Host(dy, shape), Host(gamma, {c}),
                              Host(mean, {n * c}), Host(istd, {n * c}), Host(dx, shape),
                              Host(dg, {c}), Host(db, {c}));
    Dev gx(ToChannelsLast(x, n, c), last, dtype, Layout::kNDHWC),
        gdy(ToChannelsLast(dy, n, c), last, dtype, Layout::kNDHWC),
        gy(Floats(total), last, dtype, Layout::kNDHWC),
        gdx(Floats(total), last, dtype, Layout::kNDHWC), ggamma(gamma, {c}), gbeta(beta, {c}),
        gmean(Floats(n * c), {n * c}), gistd(Floats(n * c), {n * c}), gdg(Floats(c), {c}),
        gdb(Floats(c), {c});
    cuda::InstanceNormForward(1e-5f, gx.t(), ggamma.t(), gbeta.t(), gy.t(), gmean.t(), gistd.t());
    cuda::InstanceNormBackward(gx.t(), gdy.t(), ggamma.t(), gmean.t(), gistd.t(), gdx.t(), gdg.t(),
                               gdb.t());
    const double tol = Tolerance(dtype);
    ExpectClose(gmean.Get(), mean, 1e-4, what + " mean");
    ExpectClose(gistd.Get(), istd, 1e-4, what + " inv std");
    ExpectClose(FromChannelsLast(gy.Get(), n, c), y, tol, what + " y");
    ExpectClose(FromChannelsLast(gdx.Get(), n, c), dx, tol, what + " dx");
    ExpectClose(gdg.Get(), dg, 1e-3, what + " dgamma");
    ExpectClose(gdb.Get(), db, 1e-3, what + " dbeta");

    // With the ReLU fused (3D U-Net's units); the CPU backward runs on the
    // GPU's y, whose sign carries the mask (a y within a unit of zero may
    // round to the other side of it).
    Dev gyr(Floats(total), last, dtype, Layout::kNDHWC),
        gdyr(ToChannelsLast(dy, n, c), last, dtype, Layout::kNDHWC),
        gdxr(Floats(total), last, dtype, Layout::kNDHWC), gdgr(Floats(c), {c}),
        gdbr(Floats(c), {c});
    cuda::InstanceNormReluForward(1e-5f, gx.t(), ggamma.t(), gbeta.t(), gyr.t(), gmean.t(),
                                  gistd.t());
    cuda::InstanceNormReluBackward(gx.t(), gyr.t(), gdyr.t(), ggamma.t(), gmean.t(), gistd.t(),
                                   gdxr.t(), gdgr.t(), gdbr.t());
    Floats yr = y, y_gpu = FromChannelsLast(gyr.Get(), n, c), masked = dy, dxr(total), dgr(c),
           dbr(c);
    ops::ReluForward(Host(yr, shape), Host(yr, shape));
    ExpectClose(y_gpu, yr, tol, what + " relu y");
    ops::ReluBackward(Host(y_gpu, shape), Host(masked, shape), Host(masked, shape));
    cpu::InstanceNormBackward(Host(x, shape), Host(masked, shape), Host(gamma, {c}),
                              Host(mean, {n * c}), Host(istd, {n * c}), Host(dxr, shape),
                              Host(dgr, {c}), Host(dbr, {c}));
    EXPECT_EQ(FromChannelsLast(gdyr.Get(), n, c), masked) << what << " relu masked dy";
    ExpectClose(FromChannelsLast(gdxr.Get(), n, c), dxr, tol, what + " relu dx");
    ExpectClose(gdgr.Get(), dgr, 1e-3, what + " relu dgamma");
    ExpectClose(gdbr.Get(), dbr, 1e-3, what + " relu dbeta");

    // The same with the ReLU's mask as bits: bit for bit what reading y gave.
    const int64_t words = total / c * ((c + 31) / 32);
    Dev gmask(std::vector<int32_t>(words, 0), {words}),
        gym(Floats(total), last, dtype, Layout::kNDHWC),
        gdym(ToChannelsLast(dy, n, c), last, dtype, Layout::kNDHWC),
        gdxm(Floats(total), last, dtype, Layout::kNDHWC), gdgm(Floats(c), {c}),
        gdbm(Floats(c), {c});
    cuda::InstanceNormReluForward(1e-5f, gx.t(), ggamma.t(), gbeta.t(), gym.t(), gmean.t(),
                                  gistd.t(), gmask.t());
    cuda::InstanceNormReluBackward(gx.t(), gym.t(), gdym.t(), ggamma.t(), gmean.t(), gistd.t(),
                                   gdxm.t(), gdgm.t(), gdbm.t(), gmask.t());
    EXPECT_EQ(gym.Get(), gyr.Get()) << what << " relu y with the mask";
    EXPECT_EQ(gdym.Get(), gdyr.Get()) << what << " relu masked dy from the bits";
    EXPECT_EQ(gdxm.Get(), gdxr.Get()) << what << " relu dx from the bits";
  }
}

TEST_P(CudaNormTwinTest, ChannelsLastInstanceNorm) {
  CheckChannelsLastInstanceNorm(40);
  CheckChannelsLastInstanceNorm(32);
}

INSTANTIATE_TEST_SUITE_P(ChannelsLast, CudaNormTwinTest, ::testing::Values(kCudnn, kOwn, kOwnWide),
                         [](const ::testing::TestParamInfo<Kernels>& info) {
                           return info.param == kCudnn ? "Cudnn"
                                  : info.param == kOwn ? "OwnKernels"
                                                       : "OwnWideKernels";
                         });

}  // namespace
}  // namespace mlperf
