// The GEMM-class ops of ops:: (convolutions, linear layers, batched GEMMs),
// with the rounding points of precision.h around both backends.
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/dispatch_backend.h"
#include "reference/kernels/precision.h"
#include "reference/kernels/precision_operands.h"

#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/conv.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/linear.h"
#endif

namespace mlperf::ops {

using core::Device;
using core::Tensor;
using detail::OnDevice;

namespace {

// A convolution y = op(a, b) at the rounding points precision.h names
// (nothing changes under fp32): on a CUDA device under bf16/fp16 the
// operands are converted to that type (unless stored in it) and the op
// writes that type, into y itself when y is stored in it and else widened
// into y (precision_operands.h); otherwise it reads rounded fp32 copies
// (GemmOperand) and y is rounded in place, on the CPU as it is written.
// `op(device, a, b, y, round_to)` runs the backend's twin; the CPU's rounds
// its output to round_to.
template <typename Op>
void RoundedConvolution(bool device, const Tensor& a, const Tensor& b, const Tensor& y, Op&& op) {
  if (device && InPrecisionType(a)) {
    const bool typed = y.dtype() == ComputePrecision();
    const Tensor typed_y = typed ? y : PrecisionTypeOutput(y, 2);
    op(true, PrecisionTypeOperand(a, 0), PrecisionTypeOperand(b, 1), typed_y, core::DType::kF32);
    if (!typed) CopyToFp32(typed_y, y);
    return;
  }
  if (device) {
    op(true, GemmOperand(a, 0), GemmOperand(b, 1), y, core::DType::kF32);
    return RoundOutput(y);
  }
  op(false, GemmOperand(a, 0), GemmOperand(b, 1), y, StoredRounding(y));
}

}  // namespace

void ConvForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                 const Tensor& workspace) {
  RoundedConvolution(
      OnDevice(x, {&w, &y}), x, w, y,
      [&](bool device, const Tensor& rx, const Tensor& rw, const Tensor& ry, core::DType round_to) {
        if (device) return MLPERF_CUDA_TWIN(ConvForward(g, rx, rw, ry, workspace));
        cpu::ConvForward(g, rx, rw, ry, workspace, round_to);
      });
}

void ConvBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w, const Tensor& dx,
                      const Tensor& workspace) {
  RoundedConvolution(OnDevice(dy, {&w, &dx}), dy, w, dx,
                     [&](bool device, const Tensor& rdy, const Tensor& rw, const Tensor& rdx,
                         core::DType round_to) {
                       if (device)
                         return MLPERF_CUDA_TWIN(ConvBackwardData(g, rdy, rw, rdx, workspace));
                       cpu::ConvBackwardData(g, rdy, rw, rdx, workspace, round_to);
                     });
}

void ConvBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dw,
                        const Tensor& workspace) {
  RoundedConvolution(OnDevice(x, {&dy, &dw}), x, dy, dw,
                     [&](bool device, const Tensor& rx, const Tensor& rdy, const Tensor& rdw,
                         core::DType round_to) {
                       if (device)
                         return MLPERF_CUDA_TWIN(ConvBackwardWeight(g, rx, rdy, rdw, workspace));
                       cpu::ConvBackwardWeight(g, rx, rdy, rdw, workspace, round_to);
                     });
}

void GemmStridedBatched(Device device, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                        float alpha, const float* a, int64_t stride_a, const float* b,
                        int64_t stride_b, float beta, float* c, int64_t stride_c, int64_t batch) {
  // The operands as flat tensors over every element the batch reads.
  const auto flat = [&](const float* p, int64_t stride, int64_t matrix) {
    return Tensor(const_cast<float*>(p), {stride * (batch - 1) + matrix}, core::DType::kF32,
                  device);
  };
  const Tensor fa = flat(a, stride_a, m * k), fb = flat(b, stride_b, k * n);
  if (InPrecisionType(fa)) {
    // The products in fp32 (beta may add to c), rounded below.
    MLPERF_CUDA_TWIN(GemmStridedBatchedEx(trans_a, trans_b, m, n, k, alpha,
                                          PrecisionTypeOperand(fa, 0).data(), stride_a,
                                          PrecisionTypeOperand(fb, 1).data(), stride_b, beta, c,
                                          stride_c, batch, ComputePrecision(), core::DType::kF32));
  } else {
    const float* ra = GemmOperand(fa, 0).f32();
    const float* rb = GemmOperand(fb, 1).f32();
    if (device == Device::kCuda) {
      MLPERF_CUDA_TWIN(GemmStridedBatched(trans_a, trans_b, m, n, k, alpha, ra, stride_a, rb,
                                          stride_b, beta, c, stride_c, batch));
    } else {
      cpu::GemmStridedBatched(trans_a, trans_b, m, n, k, alpha, ra, stride_a, rb, stride_b, beta, c,
                              stride_c, batch);
    }
  }
  // Only the products: other elements between them may hold anything.
  if (stride_c == m * n) return RoundOutput(flat(c, stride_c, m * n));
  for (int64_t i = 0; i < batch; ++i)
    RoundOutput(Tensor(c + i * stride_c, {m * n}, core::DType::kF32, device));
}

// On a device under bf16/fp16 the linear layers read x, w and dy in that
// type and write y and dx in their storage type: fp32 (the bias, rounded,
// added in fp32), rounded below, or the precision's type, where the op
// rounds (the bias in that type, which holds it exactly once rounded).
void LinearForward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) {
  const bool device = OnDevice(x, {&w, &bias, &y});
  const bool typed = device && InPrecisionType(x);
  const Tensor rx = typed ? PrecisionTypeOperand(x, 0) : GemmOperand(x, 0);
  const Tensor rw = typed ? PrecisionTypeOperand(w, 1) : GemmOperand(WidenedOperand(w, 1), 1);
  const Tensor rb = typed && y.dtype() == ComputePrecision() ? PrecisionTypeOperand(bias, 2)
                                                             : RoundedOperand(bias, 2);
  if (device) {
    MLPERF_CUDA_TWIN(LinearForward(rx, rw, rb, y));
  } else {
    cpu::LinearForward(rx, rw, rb, y);
  }
  RoundOutput(y);
}

void LinearBackward(const Tensor& x, const Tensor& w, const Tensor& dy, const Tensor& dx,
                    const Tensor& dw, const Tensor& dbias) {
  const bool device = OnDevice(x, {&w, &dy, &dx, &dw, &dbias});
  const bool typed = device && InPrecisionType(x);
  const Tensor rx = typed ? PrecisionTypeOperand(x, 0) : GemmOperand(x, 0);
  const Tensor rw = typed ? PrecisionTypeOperand(w, 1) : GemmOperand(WidenedOperand(w, 1), 1);
  // dy also feeds the bias gradient: rounded here.
  const Tensor rdy = typed ? PrecisionTypeOperand(dy, 2) : RoundedOperand(dy, 2);
  if (!device) return cpu::LinearBackward(rx, rw, rdy, dx, dw, dbias, StoredRounding(dw));
  MLPERF_CUDA_TWIN(LinearBackward(rx, rw, rdy, dx, dw, dbias));
  RoundOutput(dx);
  RoundOutput(dw);
  RoundOutput(dbias);
}

}  // namespace mlperf::ops
