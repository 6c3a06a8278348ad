// bf16 GEMMs on the AMX tiles of recent Intel Xeons (Sapphire Rapids on),
// for the CPU under bf16 compute precision: bf16 operands, products summed
// in fp32, as the GPU's tensor cores do. Only the order of the sums differs
// from an fp32 GEMM on the same rounded operands.
#pragma once

#include <cstdint>

namespace mlperf::cpu {

// Whether this process may run AMX bf16 instructions: the CPU has them, the
// OS saves their state and granted it to the process (asked once). False when
// MLPERF_CPU_AMX=0.
bool AmxBf16Available();

// C[m,n] = alpha * op(A) * op(B) + beta * C in the calling thread, CBLAS
// row-major conventions (lda, ldb, ldc in elements). The operands are
// rounded to bf16 (nearest even; exact for the rounded operands of bf16
// precision), or given in bf16 (their bits, uint16_t: bf16 activation
// storage). Requires AmxBf16Available(); beta == 0 never reads C. With
// round_c, C is rounded to bf16 (kept in fp32, as RoundToPrecision) while
// each block of it is in cache.
void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc, bool round_c = false);
void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta,
                 float* c, int64_t ldc);
void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const uint16_t* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c,
                 int64_t ldc);
void GemmBf16Amx(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                 const float* a, int64_t lda, const uint16_t* b, int64_t ldb, float beta, float* c,
                 int64_t ldc);

// n fp32 values as bf16 bits, rounded as the packing rounds an fp32 operand
// (nearest even, denormals as zero): an operand converted with it gives the
// GEMMs above the bits they give on the fp32 operand.
void PackedBf16(const float* src, int64_t n, uint16_t* dst);

// The same in two steps, for GEMMs that share op(B) (a convolution's chunks
// of rows): op(B) (k x n) packed into tiles once, AmxPackedBElements(k, n)
// bf16 of them, share `part` of `parts` (of the tile columns) per call so
// that a team can pack it together; then any number of GEMMs with it. A
// bf16 A not transposed whose k is a multiple of 32 is read in place by
// the tile loads, 32 rows at a time, rather than packed.
int64_t AmxPackedBElements(int64_t k, int64_t n);
void PackBf16AmxB(bool trans_b, int64_t k, int64_t n, const float* b, int64_t ldb, int part,
                  int parts, uint16_t* tiles);
void GemmBf16AmxPackedB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                        int64_t lda, const uint16_t* tiles, float beta, float* c, int64_t ldc);
void GemmBf16AmxPackedB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha,
                        const uint16_t* a, int64_t lda, const uint16_t* tiles, float beta, float* c,
                        int64_t ldc);

// B (k x n, not transposed) in bf16 written straight into the layout the
// tile loads read, so that the GEMM reads it in place instead of packing it
// (a convolution's im2col rows, written two at a time): rows 2p and 2p + 1
// interleaved as pair row p, AmxPairColumns(n) pairs long (n rounded up to
// whole pairs of 16-column tiles, zeros past n). AmxPairRows writes one pair
// row (row1 null: zeros); the pair rows must cover k rounded up to a
// multiple of 32, zeros past k. The GEMM's bits are those of GemmBf16Amx on
// the same B.
int64_t AmxPairColumns(int64_t n);
void AmxPairRows(const uint16_t* row0, const uint16_t* row1, int64_t n, uint16_t* pairs);
void GemmBf16AmxPairB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
                      int64_t lda, const uint16_t* pairs, float beta, float* c, int64_t ldc);
void GemmBf16AmxPairB(bool trans_a, int64_t m, int64_t n, int64_t k, float alpha, const uint16_t* a,
                      int64_t lda, const uint16_t* pairs, float beta, float* c, int64_t ldc);

}  // namespace mlperf::cpu
