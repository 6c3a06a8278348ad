#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/gemm.h"

namespace mlperf::cuda {

cudaDataType CublasType(core::DType t) {
  switch (t) {
    case core::DType::kF32:
      return CUDA_R_32F;
    case core::DType::kBF16:
      return CUDA_R_16BF;
    case core::DType::kF16:
      return CUDA_R_16F;
    default:
      MLPERF_CHECK_MSG(false, "GEMM operands are fp32, bf16 or fp16");
  }
  return CUDA_R_32F;
}

// cuBLAS is column-major: a row-major C = op(A) op(B) is the column-major
// C^T = op(B)^T op(A)^T, so the operands swap and the shapes read as given.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c) {
  GemmStridedBatched(trans_a, trans_b, m, n, k, alpha, a, 0, b, 0, beta, c, 0, 1);
}

void GemmStridedBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t stride_a, const float* b, int64_t stride_b,
                        float beta, float* c, int64_t stride_c, int64_t batch) {
  const int lda = static_cast<int>(trans_a ? m : k);
  const int ldb = static_cast<int>(trans_b ? k : n);
  CUBLAS_CHECK(cublasSgemmStridedBatched(
      Cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b, ldb, stride_b, a,
      lda, stride_a, &beta, c, static_cast<int>(n), stride_c, static_cast<int>(batch)));
}

void GemmStridedBatchedEx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const void* a, int64_t stride_a, const void* b, int64_t stride_b,
                          float beta, void* c, int64_t stride_c, int64_t batch, core::DType ab_type,
                          core::DType c_type) {
  const int lda = static_cast<int>(trans_a ? m : k);
  const int ldb = static_cast<int>(trans_b ? k : n);
  const bool half = ab_type != core::DType::kF32;
  // The handle is pedantic (fp32 without TF32); half operands need the
  // default mode to reach the tensor cores. The accumulation stays fp32.
  if (half) CUBLAS_CHECK(cublasSetMathMode(Cublas(), CUBLAS_DEFAULT_MATH));
  const cublasStatus_t status = cublasGemmStridedBatchedEx(
      Cublas(), trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(n), static_cast<int>(m), static_cast<int>(k), &alpha, b, CublasType(ab_type),
      ldb, stride_b, a, CublasType(ab_type), lda, stride_a, &beta, c, CublasType(c_type),
      static_cast<int>(n), stride_c, static_cast<int>(batch), CUBLAS_COMPUTE_32F,
      CUBLAS_GEMM_DEFAULT);
  if (half) CUBLAS_CHECK(cublasSetMathMode(Cublas(), CUBLAS_PEDANTIC_MATH));
  CUBLAS_CHECK(status);
}

void Gemm(bool trans_a, bool trans_b, float alpha, const core::Tensor& a, const core::Tensor& b,
          float beta, const core::Tensor& c) {
  MLPERF_CHECK(a.shape().rank() == 2 && b.shape().rank() == 2 && c.shape().rank() == 2);
  MLPERF_CHECK(a.dtype() == b.dtype());
  const int64_t m = c.dim(0), n = c.dim(1), k = trans_a ? a.dim(0) : a.dim(1);
  MLPERF_CHECK((trans_a ? a.dim(1) : a.dim(0)) == m);
  MLPERF_CHECK((trans_b ? b.dim(1) : b.dim(0)) == k && (trans_b ? b.dim(0) : b.dim(1)) == n);
  GemmStridedBatchedEx(trans_a, trans_b, m, n, k, alpha, a.data(), 0, b.data(), 0, beta, c.data(),
                       0, 1, a.dtype(), c.dtype());
}

}  // namespace mlperf::cuda
