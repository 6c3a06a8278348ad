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

// Inputs and outputs rounded at the points precision.h names (nothing
// changes under fp32). On a CUDA device under bf16/fp16 the operands are
// converted to that type and the op runs in it (precision_operands.h).
void ConvForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                 const Tensor& workspace) {
  const bool device = OnDevice(x, {&w, &y});
  if (device && InPrecisionType(x)) {
    const Tensor hy = PrecisionTypeOutput(y, 2);
    MLPERF_CUDA_TWIN(
        ConvForward(g, PrecisionTypeOperand(x, 0), PrecisionTypeOperand(w, 1), hy, workspace));
    return CopyToFp32(hy, y);
  }
  const Tensor rx = RoundedOperand(x, 0), rw = RoundedOperand(w, 1);
  if (device) {
    MLPERF_CUDA_TWIN(ConvForward(g, rx, rw, y, workspace));
  } else {
    cpu::ConvForward(g, rx, rw, y, workspace);
  }
  RoundOutput(y);
}

void ConvBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w, const Tensor& dx,
                      const Tensor& workspace) {
  const bool device = OnDevice(dy, {&w, &dx});
  if (device && InPrecisionType(dy)) {
    const Tensor hdx = PrecisionTypeOutput(dx, 2);
    MLPERF_CUDA_TWIN(ConvBackwardData(g, PrecisionTypeOperand(dy, 0), PrecisionTypeOperand(w, 1),
                                      hdx, workspace));
    return CopyToFp32(hdx, dx);
  }
  const Tensor rdy = RoundedOperand(dy, 0), rw = RoundedOperand(w, 1);
  if (device) {
    MLPERF_CUDA_TWIN(ConvBackwardData(g, rdy, rw, dx, workspace));
  } else {
    cpu::ConvBackwardData(g, rdy, rw, dx, workspace);
  }
  RoundOutput(dx);
}

void ConvBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dw,
                        const Tensor& workspace) {
  const bool device = OnDevice(x, {&dy, &dw});
  if (device && InPrecisionType(x)) {
    const Tensor hdw = PrecisionTypeOutput(dw, 2);
    MLPERF_CUDA_TWIN(ConvBackwardWeight(g, PrecisionTypeOperand(x, 0), PrecisionTypeOperand(dy, 1),
                                        hdw, workspace));
    return CopyToFp32(hdw, dw);
  }
  const Tensor rx = RoundedOperand(x, 0), rdy = RoundedOperand(dy, 1);
  if (device) {
    MLPERF_CUDA_TWIN(ConvBackwardWeight(g, rx, rdy, dw, workspace));
  } else {
    cpu::ConvBackwardWeight(g, rx, rdy, dw, workspace);
  }
  RoundOutput(dw);
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
    const float* ra = RoundedOperand(fa, 0).f32();
    const float* rb = RoundedOperand(fb, 1).f32();
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
// type and write fp32 (the bias, rounded, is added in fp32), rounded below.
void LinearForward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) {
  const bool device = OnDevice(x, {&w, &bias, &y});
  const bool typed = device && InPrecisionType(x);
  const Tensor rx = typed ? PrecisionTypeOperand(x, 0) : RoundedOperand(x, 0);
  const Tensor rw = typed ? PrecisionTypeOperand(w, 1) : RoundedOperand(w, 1);
  const Tensor rb = RoundedOperand(bias, 2);
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
  const Tensor rx = typed ? PrecisionTypeOperand(x, 0) : RoundedOperand(x, 0);
  const Tensor rw = typed ? PrecisionTypeOperand(w, 1) : RoundedOperand(w, 1);
  const Tensor rdy = typed ? PrecisionTypeOperand(dy, 2) : RoundedOperand(dy, 2);
  if (device) {
    MLPERF_CUDA_TWIN(LinearBackward(rx, rw, rdy, dx, dw, dbias));
  } else {
    cpu::LinearBackward(rx, rw, rdy, dx, dw, dbias);
  }
  RoundOutput(dx);
  RoundOutput(dw);
  RoundOutput(dbias);
}

}  // namespace mlperf::ops
