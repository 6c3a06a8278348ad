// CUDA twin of cpu/gemm.h through cuBLAS (row-major via the transposed problem),
// plus mixed-precision forms for bf16/fp16 operands.
#pragma once

#include <library_types.h>

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cuda {

// The CUDA library type of a GEMM operand: fp32, bf16 or fp16.
cudaDataType CublasType(core::DType t);

// C[m,n] = alpha * op(A) * op(B) + beta * C; op(A) is [m,k], op(B) is [k,n],
// all row-major and densely packed.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c);

// `batch` independent GEMMs, the i-th at a + i*stride_a etc.
void GemmStridedBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t stride_a, const float* b, int64_t stride_b,
                        float beta, float* c, int64_t stride_c, int64_t batch);

// As above with A and B of `ab_type` and C of `c_type` (fp32, bf16 or fp16),
// always accumulating in fp32 (CUBLAS_COMPUTE_32F; tensor cores for half
// operands). fp32 operands stay pedantic fp32 (no TF32), like Gemm.
void GemmStridedBatchedEx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const void* a, int64_t stride_a, const void* b, int64_t stride_b,
                          float beta, void* c, int64_t stride_c, int64_t batch, core::DType ab_type,
                          core::DType c_type);

// Tensor form, dtypes from the tensors: op(a) [m,k] times op(b) [k,n] into
// c [m,n] (rank-2 row-major tensors).
void Gemm(bool trans_a, bool trans_b, float alpha, const core::Tensor& a, const core::Tensor& b,
          float beta, const core::Tensor& c);

}  // namespace mlperf::cuda
