#include <cublasLt.h>

#include <cstdlib>
#include <map>
#include <string_view>
#include <tuple>

#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/gemm_epilogue.h"
#include "reference/kernels/switches.h"

namespace mlperf::cuda {
namespace {

// -1: not set, read MLPERF_GEMM_EPILOGUES; else 0 or 1.
int g_epilogues = -1;
int64_t g_runs = 0;

bool Epilogues() {
  if (g_epilogues < 0) {
    g_epilogues = ops::Switches().gemm_epilogues ? 1 : 0;
  }
  return g_epilogues == 1;
}

// cuBLASLt is column-major: a row-major matrix is its transpose there.
struct Key {
  int64_t m, n, k;
  bool trans_a, trans_b;
  cublasLtEpilogue_t epilogue;
  core::DType ab, d;  // the operands' type and the output's
  bool operator<(const Key& o) const {
    return std::tie(m, n, k, trans_a, trans_b, epilogue, ab, d) <
           std::tie(o.m, o.n, o.k, o.trans_a, o.trans_b, o.epilogue, o.ab, o.d);
  }
};

// Descriptors and the chosen algorithm of one shape, made once per thread
// (they live until the process ends: a model has a few dozen shapes).
struct Plan {
  bool ok = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

constexpr uint32_t kAlignment = 16;

const Plan& PlanFor(const Key& key) {
  thread_local std::map<Key, Plan> plans;
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  Plan p;
  const cublasOperation_t ta = key.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = key.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &key.epilogue,
                                              sizeof(key.epilogue)));
  // Stored (before op) shapes, column-major, packed.
  const int64_t a_rows = key.trans_a ? key.k : key.m, a_cols = key.trans_a ? key.m : key.k;
  const int64_t b_rows = key.trans_b ? key.n : key.k, b_cols = key.trans_b ? key.k : key.n;
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, CublasType(key.ab), a_rows, a_cols, a_rows));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, CublasType(key.ab), b_rows, b_cols, b_rows));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.c, CublasType(key.d), key.m, key.n, key.m));
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &kLtMaxWorkspace, sizeof(kLtMaxWorkspace)));
  for (cublasLtMatmulPreferenceAttributes_t a :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, a, &kAlignment, sizeof(kAlignment)));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  // An epilogue this cuBLASLt does not offer for these types is a status,
  // not an error: the unfused kernels serve.
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(LtHandle(), p.op, p.a, p.b, p.c, p.c,
                                                               pref, 1, &result, &returned);
  CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  p.ok = status == CUBLAS_STATUS_SUCCESS && returned > 0;
  if (p.ok) {
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  }
  return plans.emplace(key, p).first->second;
}

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % kAlignment == 0; }

// D = op(A) op(B) with the epilogue's bias vector (read by BIAS, written by
// BGRADB).
bool Run(const Key& key, const void* a, const void* b, void* d, void* bias) {
  if (!Epilogues() || !Aligned(a) || !Aligned(b) || !Aligned(d) || !Aligned(bias)) return false;
  const Plan& p = PlanFor(key);
  if (!p.ok) return false;
  CUBLAS_CHECK(
      cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
  void* workspace = p.workspace > 0 ? Scratch(p.workspace, kScratchWorkspace) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(LtHandle(), p.op, &one, a, p.a, b, p.b, &zero, d, p.c, d, p.c,
                              &p.algo, workspace, p.workspace, Stream()));
  ++g_runs;
  return true;
}

}  // namespace

cublasLtHandle_t LtHandle() {
  thread_local cublasLtHandle_t handle = [] {
    cublasLtHandle_t h = nullptr;
    CUBLAS_CHECK(cublasLtCreate(&h));
    return h;
  }();
  return handle;
}

// Row-major y [rows, out] is column-major y^T [out, rows] = w (x^T): A = w
// stored [in, out] column-major, transposed; B = x stored [in, rows]. The
// bias runs along D's rows (out), as BIAS broadcasts it.
bool LinearForwardWithBias(const void* x, const void* w, core::DType operands, const void* bias,
                           void* y, core::DType y_type, int64_t rows, int64_t in, int64_t out) {
  MLPERF_CHECK(y_type == core::DType::kF32 || y_type == operands);
  return Run({out, rows, in, true, false, CUBLASLT_EPILOGUE_BIAS, operands, y_type}, w, x, y,
             const_cast<void*>(bias));
}

// Row-major dw [out, in] is column-major dw^T [in, out] = x^T dy: A = x
// stored [in, rows]; B = dy stored [out, rows], transposed. BGRADB sums B
// over k (rows) per column of D: the bias gradient, per output feature.
bool WeightAndBiasGradients(const void* x, const void* dy, core::DType operands, float* dw,
                            float* dbias, int64_t rows, int64_t in, int64_t out) {
  return Run({in, out, rows, false, true, CUBLASLT_EPILOGUE_BGRADB, operands, core::DType::kF32}, x,
             dy, dw, dbias);
}

void SetGemmEpilogues(bool on) { g_epilogues = on ? 1 : 0; }

int64_t GemmEpilogueRuns() { return g_runs; }

}  // namespace mlperf::cuda
