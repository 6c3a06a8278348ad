// GEMMs run in OpenBLAS's calling thread; large ones are split over the
// OpenMP team by this wrapper. On few cores OpenBLAS's own pool, once woken,
// spins (sched_yield) for a long while after each call and competes with the
// OpenMP team for the cores (about 10% of a small ResNet step), so the pool
// is never handed work from here (see blas_threads.h).
#include "reference/kernels/cpu/gemm.h"

#include <cblas.h>
#include <omp.h>

#include "base/check.h"
#include "reference/kernels/cpu/blas_threads.h"
#include "reference/kernels/cpu/gemm_amx.h"
#include "reference/kernels/cpu/round.h"

namespace mlperf::cpu {
namespace {

// Below this many multiply-adds a GEMM is not worth a fork/join.
constexpr int64_t kMinTeamMacs = int64_t{1} << 20;

bool g_bf16_operands = false;

// One block of C with explicit leading dimensions, in the calling thread,
// rounded to round_to.
void Sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
           int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
           core::DType round_to = core::DType::kF32) {
  // On AMX every GEMM, however small, when they round their operands
  // (GemmOperand); the kernel rounds C to bf16 itself.
  const bool amx = GemmsRoundToBf16();
  if (amx) {
    GemmBf16Amx(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc,
                round_to == core::DType::kBF16);
    if (round_to == core::DType::kBF16) return;
  } else {
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, static_cast<int>(m), static_cast<int>(n),
                static_cast<int>(k), alpha, a, static_cast<int>(lda), b, static_cast<int>(ldb),
                beta, c, static_cast<int>(ldc));
  }
  if (round_to == core::DType::kF32) return;
  for (int64_t i = 0; i < m; ++i) RoundSpan(round_to, c + i * ldc, n);
}

}  // namespace

void Gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          const float* b, float beta, float* c, core::DType round_to) {
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  // Inside a parallel region the caller owns the threading (and has put
  // OpenBLAS in the calling thread).
  if (omp_in_parallel()) {
    Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n, round_to);
    return;
  }
  BlasInCallingThread blas;
  const int threads = omp_get_max_threads();
  if (threads == 1 || m * n * k < kMinTeamMacs) {
    Sgemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, n, round_to);
    return;
  }
  // Each thread computes a block of C: columns when C is wider than tall,
  // else rows. Every element's sum over k is computed as in one call.
  const bool split_columns = n >= m;
#pragma omp parallel num_threads(threads)
  {
    const int64_t t = omp_get_thread_num(), team = omp_get_num_threads();
    const int64_t total = split_columns ? n : m;
    const int64_t begin = total * t / team, end = total * (t + 1) / team;
    if (end > begin) {
      if (split_columns) {
        const float* b_block = trans_b ? b + begin * k : b + begin;
        Sgemm(trans_a, trans_b, m, end - begin, k, alpha, a, lda, b_block, ldb, beta, c + begin, n,
              round_to);
      } else {
        const float* a_block = trans_a ? a + begin : a + begin * k;
        Sgemm(trans_a, trans_b, end - begin, n, k, alpha, a_block, lda, b, ldb, beta, c + begin * n,
              n, round_to);
      }
    }
  }
}

void GemmStridedBatched(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                        const float* a, int64_t stride_a, const float* b, int64_t stride_b,
                        float beta, float* c, int64_t stride_c, int64_t batch) {
  const int64_t lda = trans_a ? m : k, ldb = trans_b ? k : n;
  const int threads = omp_get_max_threads();
  // With at least one whole matrix per thread, each thread runs its share
  // of the batch in one fork/join (BERT's attention: 64 heads of 128x128x64,
  // which split one by one cost a fork/join each, 9,216 per step).
  if (!omp_in_parallel() && threads > 1 && batch >= threads && m * n * k * batch >= kMinTeamMacs) {
    BlasInCallingThread blas;
#pragma omp parallel num_threads(threads)
    {
      int64_t begin, end;
      ThreadShare(batch, &begin, &end);
      for (int64_t i = begin; i < end; ++i)
        Sgemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta,
              c + i * stride_c, n);
    }
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    Gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, b + i * stride_b, beta,
         c + i * stride_c);
}

void SetBf16Operands(bool on) { g_bf16_operands = on; }

bool GemmsRoundToBf16() { return g_bf16_operands && AmxBf16Available(); }

void SharedB::Prepare(bool trans_b, int64_t k, int64_t n, const float* b) {
  trans_b_ = trans_b;
  k_ = k;
  n_ = n;
  b_ = b;
  packed_ = GemmsRoundToBf16();
  const auto elements = static_cast<size_t>(packed_ ? AmxPackedBElements(k, n) : 0);
  if (tiles_.size() < elements) tiles_.resize(elements);
}

void SharedB::Pack(int thread, int team) {
  if (packed_) PackBf16AmxB(trans_b_, k_, n_, b_, trans_b_ ? k_ : n_, thread, team, tiles_.data());
}

void SharedB::Gemm(bool trans_a, int64_t m, float alpha, const float* a, float beta,
                   float* c) const {
  const int64_t lda = trans_a ? m : k_;
  if (packed_)
    return GemmBf16AmxPackedB(trans_a, m, n_, k_, alpha, a, lda, tiles_.data(), beta, c, n_);
  Sgemm(trans_a, trans_b_, m, n_, k_, alpha, a, lda, b_, trans_b_ ? k_ : n_, beta, c, n_);
}

void SharedB::Gemm(bool trans_a, int64_t m, float alpha, const uint16_t* a, float beta,
                   float* c) const {
  MLPERF_CHECK_MSG(packed_, "a bf16 operand needs the GEMMs on AMX tiles (GemmsRoundToBf16)");
  GemmBf16AmxPackedB(trans_a, m, n_, k_, alpha, a, trans_a ? m : k_, tiles_.data(), beta, c, n_);
}

void SetComputeThreads(int threads) {
  omp_set_num_threads(threads);
  openblas_set_num_threads(threads);
}

}  // namespace mlperf::cpu
