// Row-major GEMM on the host through CBLAS (OpenBLAS).
#pragma once

#include <cstdint>

namespace mlperf::cpu {

// C[m,n] = alpha * op(A) * op(B) + beta * C; op(A) is [m,k], op(B) is [k,n],
// all row-major and densely packed.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c);

// `batch` independent GEMMs, the i-th at a + i*stride_a etc.
void GemmStridedBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t stride_a, const float* b, int64_t stride_b,
                        float beta, float* c, int64_t stride_c, int64_t batch);

// Whether GEMMs read their operands as bf16, as bf16 compute precision asks
// (precision.h): they then run on AMX tiles where the CPU has them
// (gemm_amx.h), which round every operand as they pack it; elsewhere in fp32
// through OpenBLAS, on operands the caller rounded. Set with the precision;
// not for concurrent use.
void SetBf16Operands(bool on);
// Whether the GEMMs round their operands themselves (bf16 operands on AMX).
bool GemmsRoundToBf16();

// Threads of the CPU kernels in this process: the OpenMP team and OpenBLAS's
// own pool (set together; more than the cores stalls OpenMP barriers).
void SetComputeThreads(int threads);

}  // namespace mlperf::cpu
