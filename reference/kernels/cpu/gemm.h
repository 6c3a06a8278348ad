// Row-major GEMM on the host through CBLAS (OpenBLAS).
#pragma once

#include <cstdint>
#include <vector>

#include "reference/core/dtype.h"

namespace mlperf::cpu {

// C[m,n] = alpha * op(A) * op(B) + beta * C; op(A) is [m,k], op(B) is [k,n],
// all row-major and densely packed. C is then rounded to round_to (bf16 or
// fp16 precision, kept in fp32; nothing under kF32), on AMX while each block
// of it is in cache.
void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c, core::DType round_to = core::DType::kF32);

// op(B) of GEMMs that share it (a convolution's weight across its chunks of
// rows), prepared once per op: packed into AMX tiles where the GEMMs round
// to bf16 on them (GemmsRoundToBf16), rather than packed again by every
// GEMM; elsewhere only remembered. Prepare outside the parallel region, Pack
// from every thread of the team (each packs its share; a barrier follows
// before any Gemm), then Gemm from any of them. Same results as Gemm.
class SharedB {
 public:
  // op(B) is [k, n], row-major and densely packed, as Gemm's.
  void Prepare(bool trans_b, int64_t k, int64_t n, const float* b);
  void Pack(int thread, int team);
  // C[m, n] = alpha * op(A) * op(B) + beta * C in the calling thread.
  void Gemm(bool trans_a, int64_t m, float alpha, const float* a, float beta, float* c) const;
  // The same with A in bf16 (its bits): packed tiles only.
  void Gemm(bool trans_a, int64_t m, float alpha, const uint16_t* a, float beta, float* c) const;

 private:
  bool trans_b_ = false, packed_ = false;
  int64_t k_ = 0, n_ = 0;
  const float* b_ = nullptr;
  std::vector<uint16_t> tiles_;
};

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
