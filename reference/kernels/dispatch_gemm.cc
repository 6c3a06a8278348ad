// The GEMM-class ops of ops:: (convolutions, linear layers, batched GEMMs),
// with the rounding points of precision.h around both backends.
#include "reference/kernels/cpu/conv.h"
#include "reference/kernels/cpu/gemm.h"
#include "reference/kernels/cpu/linear.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/dispatch_backend.h"
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
// changes under fp32).
void ConvForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                 const Tensor& workspace) {
  const Tensor rx = RoundedOperand(x, 0), rw = RoundedOperand(w, 1);
  if (OnDevice(x, {&w, &y})) {
    MLPERF_CUDA_TWIN(ConvForward(g, rx, rw, y, workspace));
  } else {
    cpu::ConvForward(g, rx, rw, y, workspace);
  }
  RoundOutput(y);
}

void ConvBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w, const Tensor& dx,
                      const Tensor& workspace) {
  const Tensor rdy = RoundedOperand(dy, 0), rw = RoundedOperand(w, 1);
  if (OnDevice(dy, {&w, &dx})) {
    MLPERF_CUDA_TWIN(ConvBackwardData(g, rdy, rw, dx, workspace));
  } else {
    cpu::ConvBackwardData(g, rdy, rw, dx, workspace);
  }
  RoundOutput(dx);
}

void ConvBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy, const Tensor& dw,
                        const Tensor& workspace) {
  const Tensor rx = RoundedOperand(x, 0), rdy = RoundedOperand(dy, 1);
  if (OnDevice(x, {&dy, &dw})) {
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
  const float* ra = RoundedOperand(flat(a, stride_a, m * k), 0).f32();
  const float* rb = RoundedOperand(flat(b, stride_b, k * n), 1).f32();
  if (device == Device::kCuda) {
    MLPERF_CUDA_TWIN(GemmStridedBatched(trans_a, trans_b, m, n, k, alpha, ra, stride_a, rb,
                                        stride_b, beta, c, stride_c, batch));
  } else {
    cpu::GemmStridedBatched(trans_a, trans_b, m, n, k, alpha, ra, stride_a, rb, stride_b, beta, c,
                            stride_c, batch);
  }
  // Only the products: other elements between them may hold anything.
  if (stride_c == m * n) return RoundOutput(flat(c, stride_c, m * n));
  for (int64_t i = 0; i < batch; ++i)
    RoundOutput(Tensor(c + i * stride_c, {m * n}, core::DType::kF32, device));
}

void LinearForward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y) {
  const Tensor rx = RoundedOperand(x, 0), rw = RoundedOperand(w, 1), rb = RoundedOperand(bias, 2);
  if (OnDevice(x, {&w, &bias, &y})) {
    MLPERF_CUDA_TWIN(LinearForward(rx, rw, rb, y));
  } else {
    cpu::LinearForward(rx, rw, rb, y);
  }
  RoundOutput(y);
}

void LinearBackward(const Tensor& x, const Tensor& w, const Tensor& dy, const Tensor& dx,
                    const Tensor& dw, const Tensor& dbias) {
  const Tensor rx = RoundedOperand(x, 0), rw = RoundedOperand(w, 1), rdy = RoundedOperand(dy, 2);
  if (OnDevice(x, {&w, &dy, &dx, &dw, &dbias})) {
    MLPERF_CUDA_TWIN(LinearBackward(rx, rw, rdy, dx, dw, dbias));
  } else {
    cpu::LinearBackward(rx, rw, rdy, dx, dw, dbias);
  }
  RoundOutput(dx);
  RoundOutput(dw);
  RoundOutput(dbias);
}

}  // namespace mlperf::ops
