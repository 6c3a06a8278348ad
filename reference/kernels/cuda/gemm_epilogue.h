// The dense layers' GEMMs through cuBLASLt with the bias work fused into the
// GEMM's epilogue (fp32 operands and accumulation, no TF32):
//   y = x w^T + bias                    (the bias added as y is written)
//   dw = dy^T x, dbias = sum over rows of dy (reduced as dy is read)
// which saves the separate bias kernels' passes over y and dy. Each call
// returns false, having queued nothing, where cuBLASLt offers no algorithm
// for the shape or a pointer is not 16-byte aligned; the caller then runs
// the unfused kernels.
#pragma once

#include <cstdint>

namespace mlperf::cuda {

// x: [rows, in], w: [out, in], bias: [out], y: [rows, out] (row-major).
bool LinearForwardWithBias(const float* x, const float* w, const float* bias, float* y,
                           int64_t rows, int64_t in, int64_t out);
// dy: [rows, out], x: [rows, in]; dw: [out, in], dbias: [out], overwritten.
bool WeightAndBiasGradients(const float* x, const float* dy, float* dw, float* dbias, int64_t rows,
                            int64_t in, int64_t out);

// On by default. Off, LinearForward and LinearBackward run the unfused
// kernels (the twin test compares the two).
void SetGemmEpilogues(bool on);

}  // namespace mlperf::cuda
