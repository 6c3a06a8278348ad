// The CPU's FP8 linear layers (ops/fp8.h): the casts produce the FP8
// values in fp32 (exact there, and in bf16, so the GEMMs of either kind
// multiply them exactly) and the GEMMs' alpha undoes the scales.
#include <algorithm>
#include <cmath>
#include <vector>

#include "base/check.h"
#include "reference/core/fp8.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/parallel.h"
#include "reference/kernels/cpu/round.h"
#include "reference/kernels/ops/fp8.h"

namespace mlperf::cpu {
namespace {

using core::DType;
using core::Tensor;
using ops::kFp8AmaxAt;
using ops::kFp8ScaleAt;
using ops::kFp8ScaleInverseAt;

bool Gradient(int role) { return role == ops::kFp8GradOutput; }

float LoadFloat(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kBF16 ? Bf16Value(t.as<uint16_t>()[i]) : t.f32()[i];
}

// x [rows, cols] times scale, cast, into q (codes or values; transposed
// when asked); returns max |x|.
float CastScaled(const Tensor& x, float scale, int role, bool transpose, const Tensor& q) {
  MLPERF_CHECK_MSG(x.dtype() == DType::kF32 || x.dtype() == DType::kBF16,
                   "Fp8Quantize: x must be fp32 or bf16");
  MLPERF_CHECK_MSG(q.dtype() == DType::kU8 || q.dtype() == DType::kF32,
                   "Fp8Quantize: q holds codes (u8) or values (fp32)");
  MLPERF_CHECK(q.numel() == x.numel() && x.shape().rank() >= 1);
  const int64_t cols = x.dim(x.shape().rank() - 1), rows = cols == 0 ? 0 : x.numel() / cols;
  const bool gradient = Gradient(role), codes = q.dtype() == DType::kU8;
  float amax = 0.0f;
#pragma omp parallel for reduction(max : amax) if (WorthParallel(x.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const float v = LoadFloat(x, r * cols + c);
      amax = std::max(amax, std::fabs(v));
      const int64_t at = transpose ? c * rows + r : r * cols + c;
      const float s = v * scale;
      if (codes) {
        q.as<uint8_t>()[at] = gradient ? core::FloatToE5m2(s, true) : core::FloatToE4m3(s, true);
      } else {
        q.f32()[at] = gradient ? RoundToE5m2Saturated(s) : RoundToE4m3Saturated(s);
      }
    }
  }
  return amax;
}

void RaiseAmax(const Tensor& state, int role, float amax) {
  float& slot = state.f32()[kFp8AmaxAt + role];
  slot = std::max(slot, amax);
}

void Fp8Quantize(const Tensor& x, const Tensor& state, int role, bool transpose, const Tensor& q) {
  MLPERF_CHECK(state.numel() == ops::kFp8StateFloats && role >= 0 && role < ops::kFp8Roles);
  RaiseAmax(state, role, CastScaled(x, state.f32()[kFp8ScaleAt + role], role, transpose, q));
}

// Scratch for the cast operands, one per role; it only grows.
Tensor Values(const Tensor& like, int role) {
  static thread_local std::vector<float> buffers[ops::kFp8Roles];
  std::vector<float>& b = buffers[role];
  if (static_cast<int64_t>(b.size()) < like.numel()) b.resize(static_cast<size_t>(like.numel()));
  return Tensor(b.data(), like.shape(), DType::kF32);
}

Tensor Cast(const Tensor& x, const Tensor& state, int role) {
  const Tensor q = Values(x, role);
  Fp8Quantize(x, state, role, false, q);
  return q;
}

float Descale(const Tensor& state, int a, int b) {
  return state.f32()[kFp8ScaleInverseAt + a] * state.f32()[kFp8ScaleInverseAt + b];
}

void Fp8LinearForward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                      const Tensor& state) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(y.numel() == rows * out && y.dtype() == DType::kF32);
  const Tensor qx = Cast(x, state, ops::kFp8Input), qw = Cast(w, state, ops::kFp8Weight);
  float* py = y.f32();
  Gemm(false, true, rows, out, in, Descale(state, ops::kFp8Input, ops::kFp8Weight), qx.f32(),
       qw.f32(), 0.0f, py);
  const float* pb = bias.empty() ? nullptr : bias.f32();
  MLPERF_CHECK(bias.empty() || bias.numel() == out);
#pragma omp parallel for if (WorthParallel(y.numel()))
  for (int64_t r = 0; r < rows; ++r) {
    float* row = py + r * out;
    if (pb != nullptr)
      for (int64_t o = 0; o < out; ++o) row[o] += RoundToBf16(pb[o]);  // bf16, as on a device
    RoundSpan(DType::kBF16, row, out);
  }
}

void Fp8LinearBackward(const Tensor& x, const Tensor& w, const Tensor& dy, const Tensor& dx,
                       const Tensor& dw, const Tensor& dbias, const Tensor& state) {
  const int64_t out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(dy.numel() == rows * out && (dw.empty() || dw.numel() == out * in));
  const Tensor qdy = Cast(dy, state, ops::kFp8GradOutput);
  if (!dx.empty()) {
    const Tensor qw = Cast(w, state, ops::kFp8Weight);
    Gemm(false, false, rows, in, out, Descale(state, ops::kFp8GradOutput, ops::kFp8Weight),
         qdy.f32(), qw.f32(), 0.0f, dx.f32(), DType::kBF16);
  }
  if (!dw.empty()) {
    const Tensor qx = Cast(x, state, ops::kFp8Input);
    Gemm(true, false, out, in, rows, Descale(state, ops::kFp8GradOutput, ops::kFp8Input), qdy.f32(),
         qx.f32(), 0.0f, dw.f32(), DType::kBF16);
  }
  if (dbias.empty()) return;
  // Column sums in fp64, rows in order, as the other linear layers sum them.
  float* pdb = dbias.f32();
#pragma omp parallel for if (WorthParallel(dy.numel()))
  for (int64_t o = 0; o < out; ++o) {
    double sum = 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += LoadFloat(dy, r * out + o);
    pdb[o] = RoundToBf16(static_cast<float>(sum));
  }
}

void Fp8UpdateScaling(const Tensor& state, const float* amax, int64_t stride, int64_t ranks) {
  MLPERF_CHECK(state.numel() == ops::kFp8StateFloats && ranks >= 1);
  float* s = state.f32();
  for (int role = 0; role < ops::kFp8Roles; ++role) {
    float step = 0.0f;
    for (int64_t r = 0; r < ranks; ++r) {
      const float a = amax[r * stride + role];
      step = a > step || std::isnan(a) ? a : step;  // a NaN stays
    }
    float* history = s + ops::kFp8HistoryAt + role * ops::kFp8History;
    std::copy_backward(history, history + ops::kFp8History - 1, history + ops::kFp8History);
    history[0] = step;
    float most = 0.0f;
    bool finite = true;
    for (int i = 0; i < ops::kFp8History; ++i) {
      finite = finite && std::isfinite(history[i]);
      most = std::max(most, history[i]);
    }
    if (finite && most > 0.0f) {
      s[kFp8ScaleAt + role] = (Gradient(role) ? core::kE5m2Max : core::kE4m3Max) / most;
      s[kFp8ScaleInverseAt + role] = 1.0f / s[kFp8ScaleAt + role];
    }
    s[kFp8AmaxAt + role] = 0.0f;
  }
}

}  // namespace

MLPERF_REGISTER_KERNEL(Fp8Quantize, Cpu, Fp8Quantize);
MLPERF_REGISTER_KERNEL(Fp8LinearForward, Cpu, Fp8LinearForward);
MLPERF_REGISTER_KERNEL(Fp8LinearBackward, Cpu, Fp8LinearBackward);
MLPERF_REGISTER_KERNEL(Fp8UpdateScaling, Cpu, Fp8UpdateScaling);

}  // namespace mlperf::cpu
