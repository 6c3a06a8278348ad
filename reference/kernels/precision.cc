#include "reference/kernels/precision.h"

#include <cstdlib>
#include <string_view>
#include <vector>

#include "base/check.h"
#include "reference/kernels/cpu/elementwise.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/ops/elementwise.h"
#include "reference/kernels/ops/fp8.h"
#include "reference/kernels/precision_operands.h"
#include "reference/kernels/switches.h"

#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/elementwise.h"
#endif

namespace mlperf::ops {
namespace {

core::DType g_precision = core::DType::kF32;
bool g_fp8_linears = false;

bool Reduced(core::DType precision) {
  return precision == core::DType::kBF16 || precision == core::DType::kF16;
}

// Host scratch for the rounded operands, one buffer per slot; it only grows.
float* HostScratch(int64_t elements, int slot) {
  static thread_local std::vector<float> buffers[kOperandSlots];
  std::vector<float>& b = buffers[slot];
  if (static_cast<int64_t>(b.size()) < elements) b.resize(static_cast<size_t>(elements));
  return b.data();
}

}  // namespace

core::DType ComputePrecision() { return g_precision; }

std::string_view PrecisionName(core::DType precision) {
  switch (precision) {
    case core::DType::kBF16:
      return "bf16";
    case core::DType::kF16:
      return "fp16";
    default:
      return "fp32";
  }
}

bool Fp8Linears() { return g_fp8_linears; }

PrecisionScope::PrecisionScope(core::DType precision, bool fp8_linears)
    : previous_(g_precision), previous_fp8_(g_fp8_linears) {
  MLPERF_CHECK_MSG(precision == core::DType::kF32 || Reduced(precision),
                   "compute precision must be fp32, bf16 or fp16");
  MLPERF_CHECK_MSG(!fp8_linears || precision == core::DType::kBF16,
                   "FP8 linear layers run with bf16 elsewhere");
  g_precision = precision;
  g_fp8_linears = fp8_linears;
  cpu::SetBf16Operands(precision == core::DType::kBF16);
}

PrecisionScope::~PrecisionScope() {
  g_precision = previous_;
  g_fp8_linears = previous_fp8_;
  cpu::SetBf16Operands(previous_ == core::DType::kBF16);
}

void ResetFp8Scaling(const core::Tensor& state) {
  MLPERF_CHECK(state.numel() == kFp8StateFloats && state.dtype() == core::DType::kF32);
  ops::Fill(state, 0.0f);
  ops::Fill(
      core::Tensor(state.f32() + kFp8ScaleAt, {2 * kFp8Roles}, core::DType::kF32, state.device()),
      1.0f);
}

void RoundToPrecision(core::DType precision, const core::Tensor& src, const core::Tensor& dst) {
  MLPERF_CHECK(Reduced(precision) && src.numel() == dst.numel());
  MLPERF_CHECK_MSG(src.device() == dst.device(), "ops: tensors on different devices");
  if (src.device() == core::Device::kCuda) {
#ifdef MLPERF_HAVE_CUDA
    return cuda::RoundToPrecision(precision, src, dst);
#else
    MLPERF_CHECK_MSG(false, "ops::RoundToPrecision: device tensor in a build without CUDA");
#endif
  }
  cpu::RoundToPrecision(precision, src, dst);
}

namespace {
// -1: not set, read MLPERF_TYPED_ACTIVATIONS; else 0 or 1.
int g_typed_activations = -1;
}  // namespace

bool TypedActivations() {
  if (g_typed_activations >= 0) return g_typed_activations == 1;
  return Switches().typed_activations;
}

TypedActivationsScope::TypedActivationsScope(bool on) : previous_(g_typed_activations) {
  g_typed_activations = on ? 1 : 0;
}

TypedActivationsScope::~TypedActivationsScope() { g_typed_activations = previous_; }

core::DType ActivationStorageType(core::Device device, bool host_typed) {
  const core::DType precision = ComputePrecision();
  if (!Reduced(precision) || !TypedActivations()) return core::DType::kF32;
  if (device == core::Device::kCuda) return precision;
  return host_typed && precision == core::DType::kBF16 && cpu::GemmsRoundToBf16()
             ? precision
             : core::DType::kF32;
}

core::DType StoredRounding(const core::Tensor& t) {
  const core::DType precision = ComputePrecision();
  if (t.empty() || t.dtype() == precision) return core::DType::kF32;
  MLPERF_CHECK_MSG(t.dtype() == core::DType::kF32,
                   "ops: an activation stored in a reduced type, used under another precision");
  return Reduced(precision) ? precision : core::DType::kF32;
}

void RoundStored(const core::Tensor& t) {
  const core::DType precision = StoredRounding(t);
  if (precision != core::DType::kF32) RoundToPrecision(precision, t, t);
}

core::Tensor RoundedOperand(const core::Tensor& x, int slot) {
  const core::DType precision = ComputePrecision();
  if (!Reduced(precision) || x.empty()) return x;
  MLPERF_CHECK(slot >= 0 && slot < kOperandSlots);
  void* data = nullptr;
  if (x.device() == core::Device::kCuda) {
#ifdef MLPERF_HAVE_CUDA
    data = cuda::Scratch(x.bytes(), cuda::kScratchOperand0 + slot);
#endif
  } else {
    data = HostScratch(x.numel(), slot);
  }
  const core::Tensor copy(data, x.shape(), x.dtype(), x.device(), x.layout());
  RoundToPrecision(precision, x, copy);
  return copy;
}

core::Tensor WidenedOperand(const core::Tensor& x, int slot) {
  if (x.empty() || x.dtype() == core::DType::kF32) return x;
  MLPERF_CHECK(slot >= 0 && slot < kOperandSlots);
  void* data = nullptr;
  if (x.device() == core::Device::kCuda) {
#ifdef MLPERF_HAVE_CUDA
    data = cuda::Scratch(static_cast<size_t>(x.numel()) * sizeof(float),
                         cuda::kScratchOperand0 + slot);
#endif
  } else {
    data = HostScratch(x.numel(), slot);
  }
  const core::Tensor wide(data, x.shape(), core::DType::kF32, x.device(), x.layout());
  ops::Cast(x, wide);
  return wide;
}

core::Tensor GemmOperand(const core::Tensor& x, int slot) {
  if (x.device() == core::Device::kCpu && cpu::GemmsRoundToBf16()) return x;
  return RoundedOperand(x, slot);
}

void RoundOutput(const core::Tensor& y) {
  const core::DType precision = ComputePrecision();
  if (Reduced(precision) && !y.empty() && y.dtype() != precision) RoundToPrecision(precision, y, y);
}

bool InPrecisionType(const core::Tensor& x) {
  return x.device() == core::Device::kCuda && Reduced(ComputePrecision());
}

#ifdef MLPERF_HAVE_CUDA

core::Tensor PrecisionTypeOutput(const core::Tensor& y, int slot) {
  MLPERF_CHECK(InPrecisionType(y) && slot >= 0 && slot < kOperandSlots);
  const core::DType type = ComputePrecision();
  void* data = cuda::Scratch(static_cast<size_t>(y.numel()) * core::DTypeSize(type),
                             cuda::kScratchOperand0 + slot);
  return core::Tensor(data, y.shape(), type, y.device(), y.layout());
}

core::Tensor PrecisionTypeOperand(const core::Tensor& x, int slot) {
  if (x.empty() || x.dtype() == ComputePrecision()) return x;  // stored in the type
  const core::Tensor half = PrecisionTypeOutput(x, slot);
  ops::Cast(x, half);
  return half;
}

void CopyToFp32(const core::Tensor& half, const core::Tensor& y) { ops::Cast(half, y); }

#else

core::Tensor PrecisionTypeOutput(const core::Tensor&, int) {
  MLPERF_CHECK_MSG(false, "ops: device tensor in a build without CUDA");
  return {};
}
core::Tensor PrecisionTypeOperand(const core::Tensor& x, int slot) {
  return PrecisionTypeOutput(x, slot);
}
void CopyToFp32(const core::Tensor&, const core::Tensor&) {
  MLPERF_CHECK_MSG(false, "ops: device tensor in a build without CUDA");
}

#endif

}  // namespace mlperf::ops
