// The dense layers' GEMMs through cuBLASLt with the bias work fused into the
// GEMM's epilogue (fp32 accumulation; fp32 operands without TF32, or bf16 /
// fp16 operands on the tensor cores):
//   y = x w^T + bias                    (the bias added as y is written)
//   dw = dy^T x, dbias = sum over rows of dy (reduced as dy is read)
// which saves the separate bias kernels' passes over y and dy. The bias is
// of y's type (cuBLASLt's rule; a bias rounded to bf16 loses nothing in
// bf16), and the sum is rounded once, as y is stored: as the CPU rounds
// x w^T + bias. dw and dbias are fp32. Each call returns false, having
// queued nothing, where cuBLASLt offers no algorithm for the shape and types
// or a pointer is not 16-byte aligned; the caller then runs the unfused
// kernels.
#pragma once

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>

#include "reference/core/dtype.h"

namespace mlperf::cuda {

// This thread's cuBLASLt handle, and the workspace its GEMMs may take (what
// NVIDIA suggests for Hopper); shared with the FP8 GEMMs (fp8_linear.cu).
cublasLtHandle_t LtHandle();
inline constexpr size_t kLtMaxWorkspace = size_t{32} << 20;

// x: [rows, in], w: [out, in] (both of `operands`), y: [rows, out] and bias:
// [out] of `y_type` (fp32, or the operands' reduced type), row-major.
bool LinearForwardWithBias(const void* x, const void* w, core::DType operands, const void* bias,
                           void* y, core::DType y_type, int64_t rows, int64_t in, int64_t out);
// dy: [rows, out], x: [rows, in] (both of `operands`); dw: [out, in], dbias:
// [out], fp32, overwritten.
bool WeightAndBiasGradients(const void* x, const void* dy, core::DType operands, float* dw,
                            float* dbias, int64_t rows, int64_t in, int64_t out);

// On by default (MLPERF_GEMM_EPILOGUES=0 turns them off). Off, LinearForward
// and LinearBackward run the unfused kernels (the twin tests compare the two).
void SetGemmEpilogues(bool on);
// GEMMs run with an epilogue so far in this process (tests check that a
// shape took the fused path).
int64_t GemmEpilogueRuns();

}  // namespace mlperf::cuda
