// Label `gpu`: the FP8 linear layers' CUDA kernels (cuda/fp8_linear.cu)
// against their CPU twins: the casts' codes and amaxes bit for bit, the
// three GEMMs on cuBLASLt's FP8 path (dimensions multiples of 16) and on the
// widened-bf16 fallback (not), with fp32 and bf16 activations, and the
// scaling update bit for bit. Skips without a CUDA device.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "fmt/format.h"
#include "reference/core/fp8.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/ops/fp8.h"
#include "tests/core/cuda_twin_util.h"

namespace mlperf {
namespace {

using core::DType;
using core::Tensor;
using twin::Dev;
using twin::ExpectClose;
using twin::Floats;
using twin::Host;

class CudaFp8TwinTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::DeviceAvailable()) GTEST_SKIP() << "no CUDA device; the CPU twins are tested";
  }
};

Floats State(float sx, float sw, float sg) {
  Floats s(ops::kFp8StateFloats, 0.0f);
  const float scales[3] = {sx, sw, sg};
  for (int r = 0; r < 3; ++r) {
    s[ops::kFp8ScaleAt + r] = scales[r];
    s[ops::kFp8ScaleInverseAt + r] = 1.0f / scales[r];
  }
  return s;
}

std::vector<uint8_t> Codes(void* device, size_t n) {
  cuda::Synchronize();
  std::vector<uint8_t> out(n);
  EXPECT_EQ(cudaMemcpy(out.data(), device, n, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

TEST_F(CudaFp8TwinTest, CastsGiveTheCpusCodesAndAmaxes) {
  const int64_t rows = 70, cols = 45;  // partial tiles both ways
  Floats x = twin::Random(rows * cols, 1, -30.0f, 30.0f);
  x[3] = 1e9f;    // saturates
  x[4] = 1e-12f;  // below the subnormals
  x[5] = 3e-3f;   // an E4M3 subnormal once scaled
  Dev gx(x, {rows, cols});
  void* q = nullptr;
  ASSERT_EQ(cudaMalloc(&q, x.size()), cudaSuccess);
  for (const int role : {ops::kFp8Input, ops::kFp8GradOutput}) {
    for (const bool transpose : {false, true}) {
      Floats state = State(0.7f, 1.0f, 900.0f), cpu_codes_state = state;
      Dev gstate(state, {ops::kFp8StateFloats});
      std::vector<uint8_t> want(x.size());
      ops::Fp8Quantize(Host(x, {rows, cols}), Host(cpu_codes_state, {ops::kFp8StateFloats}), role,
                       transpose, Tensor(want.data(), {rows, cols}, DType::kU8));
      ops::Fp8Quantize(gx.t(), gstate.t(), role, transpose,
                       Tensor(q, {rows, cols}, DType::kU8, core::Device::kCuda));
      EXPECT_EQ(Codes(q, x.size()), want) << "role " << role << " transpose " << transpose;
      EXPECT_EQ(gstate.Get(), cpu_codes_state);
    }
  }
  cudaFree(q);
}

void CompareLinear(int64_t rows, int64_t in, int64_t out, DType activations) {
  Floats x = twin::Rounded(twin::Random(rows * in, 2, -3.0f, 3.0f), activations);
  Floats w = twin::Random(out * in, 3, -0.1f, 0.1f), b = twin::Random(out, 4);
  Floats dy = twin::Rounded(twin::Random(rows * out, 5, -1e-3f, 1e-3f), activations);
  Floats state = State(40.0f, 4000.0f, 5e7f);
  Floats y(rows * out), dx(rows * in), dw(out * in), db(out);
  Dev gx(x, {rows, in}, activations), gw(w, {out, in}), gb(b, {out}),
      gdy(dy, {rows, out}, activations);
  Dev gy(y, {rows, out}, activations), gdx(dx, {rows, in}, activations), gdw(dw, {out, in}),
      gdb(db, {out}), gstate(state, {ops::kFp8StateFloats});
  const Tensor s = Host(state, {ops::kFp8StateFloats});
  ops::Fp8LinearForward(Host(x, {rows, in}), Host(w, {out, in}), Host(b, {out}),
                        Host(y, {rows, out}), s);
  ops::Fp8LinearBackward(Host(x, {rows, in}), Host(w, {out, in}), Host(dy, {rows, out}),
                         Host(dx, {rows, in}), Host(dw, {out, in}), Host(db, {out}), s);
  ops::Fp8LinearForward(gx.t(), gw.t(), gb.t(), gy.t(), gstate.t());
  ops::Fp8LinearBackward(gx.t(), gw.t(), gdy.t(), gdx.t(), gdw.t(), gdb.t(), gstate.t());
  // Exact products summed in another order, then rounded to bf16: a bf16
  // step apart at most.
  const std::string what = fmt::format("{}x{}x{} {}", rows, in, out, twin::Name(activations));
  ExpectClose(gy.Get(), y, 8e-3, what + " y");
  ExpectClose(gdx.Get(), dx, 8e-3, what + " dx");
  ExpectClose(gdw.Get(), dw, 8e-3, what + " dw");
  ExpectClose(gdb.Get(), db, 8e-3, what + " dbias");
  EXPECT_EQ(gstate.Get(), state) << what << ": the amaxes";
}

TEST_F(CudaFp8TwinTest, LinearOnCublasLtsFp8Path) { CompareLinear(64, 96, 48, DType::kF32); }
TEST_F(CudaFp8TwinTest, LinearWithBf16Activations) { CompareLinear(64, 96, 48, DType::kBF16); }
TEST_F(CudaFp8TwinTest, LinearOnTheWidenedFallback) { CompareLinear(12, 40, 24, DType::kF32); }

TEST_F(CudaFp8TwinTest, ScalingUpdatesBitForBit) {
  Floats state(ops::kFp8StateFloats);
  ops::ResetFp8Scaling(Host(state, {ops::kFp8StateFloats}));
  Dev gstate(state, {ops::kFp8StateFloats});
  const int64_t ranks = 2, stride = 5;
  for (int step = 0; step < 40; ++step) {
    Floats amax = twin::Random(ranks * stride, 100 + step, 0.0f, 8.0f);
    if (step == 7) amax[1] = 0.0f, amax[stride + 1] = 0.0f;
    Dev gamax(amax, {ranks * stride});
    ops::Fp8UpdateScaling(Host(state, {ops::kFp8StateFloats}), amax.data(), stride, ranks);
    ops::Fp8UpdateScaling(gstate.t(), gamax.t().f32(), stride, ranks);
    ASSERT_EQ(gstate.Get(), state) << "step " << step;
  }
}

}  // namespace
}  // namespace mlperf
