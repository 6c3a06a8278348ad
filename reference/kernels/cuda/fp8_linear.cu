// CUDA kernels of ops/fp8.h, twins of cpu/fp8_linear.cc. The casts write
// FP8 codes (cuda_fp8.h's saturating conversions) and raise the amaxes on
// the device; the GEMMs run on cuBLASLt's FP8 kernels, which take both
// operands with the reduction dimension innermost (its "TN" form), so the
// backward casts dy, x and w transposed where a GEMM needs them so, as
// Transformer Engine's cast-transpose does. The scales' inverses are
// cuBLASLt's A/B scales (device pointers into the state: no host round
// trip). Where cuBLASLt offers no FP8 algorithm for a shape (dimensions not
// multiples of 16, an older GPU), the codes are widened to bf16 (exactly)
// and a bf16 GEMM with the same epilogue serves.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "base/check.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/device_util.cuh"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/gemm_epilogue.h"
#include "reference/kernels/cuda/linear.h"
#include "reference/kernels/ops/elementwise.h"
#include "reference/kernels/ops/fp8.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Tensor;

constexpr int kTile = 32, kTileRows = 8;

bool Gradient(int role) { return role == ops::kFp8GradOutput; }

// q = cast(x * *scale) of x [rows, cols] (written [cols, rows] when
// transposed, through a shared tile so both sides stay coalesced), and
// *amax raised to max |x| (the bits of non-negative floats order as they do).
__global__ void QuantizeKernel(const void* x, DType type, long long rows, long long cols,
                               const float* scale, bool e5m2, bool transpose, unsigned char* q,
                               unsigned int* amax) {
  __shared__ unsigned char tile[kTile][kTile + 1];
  const float s = *scale;
  const __nv_fp8_interpretation_t format = e5m2 ? __NV_E5M2 : __NV_E4M3;
  const long long row_tiles = (rows + kTile - 1) / kTile;
  const long long c0 = static_cast<long long>(blockIdx.x) * kTile;
  float most = 0.0f;
  for (long long t = blockIdx.y; t < row_tiles; t += gridDim.y) {
    const long long r0 = t * kTile;
    for (int i = threadIdx.y; i < kTile; i += kTileRows) {
      const long long r = r0 + i, c = c0 + threadIdx.x;
      if (r >= rows || c >= cols) continue;
      const float v = detail::LoadAs(x, type, r * cols + c);
      most = fmaxf(most, fabsf(v));
      const unsigned char code = __nv_cvt_float_to_fp8(v * s, __NV_SATFINITE, format);
      if (transpose) {
        tile[i][threadIdx.x] = code;
      } else {
        q[r * cols + c] = code;
      }
    }
    if (!transpose) continue;
    __syncthreads();
    for (int i = threadIdx.y; i < kTile; i += kTileRows) {
      const long long c = c0 + i, r = r0 + threadIdx.x;
      if (c < cols && r < rows) q[c * rows + r] = tile[threadIdx.x][i];
    }
    __syncthreads();
  }
  for (int offset = 16; offset > 0; offset /= 2)
    most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, offset));
  if (threadIdx.x == 0) atomicMax(amax, __float_as_uint(most));
}

void Quantize(const Tensor& x, const Tensor& state, int role, bool transpose, unsigned char* q) {
  const long long cols = x.dim(x.shape().rank() - 1), rows = cols == 0 ? 0 : x.numel() / cols;
  if (rows == 0) return;
  const dim3 grid(static_cast<unsigned>((cols + kTile - 1) / kTile),
                  static_cast<unsigned>(std::min<long long>((rows + kTile - 1) / kTile, 65535)));
  float* s = state.f32();
  QuantizeKernel<<<grid, dim3(kTile, kTileRows), 0, Stream()>>>(
      x.data(), x.dtype(), rows, cols, s + ops::kFp8ScaleAt + role, Gradient(role), transpose, q,
      reinterpret_cast<unsigned int*>(s + ops::kFp8AmaxAt + role));
  CUDA_CHECK_LAUNCH();
}

void Fp8Quantize(const Tensor& x, const Tensor& state, int role, bool transpose, const Tensor& q) {
  MLPERF_CHECK(state.numel() == ops::kFp8StateFloats && role >= 0 && role < ops::kFp8Roles);
  MLPERF_CHECK_MSG(x.dtype() == DType::kF32 || x.dtype() == DType::kBF16,
                   "Fp8Quantize: x must be fp32 or bf16");
  MLPERF_CHECK_MSG(q.dtype() == DType::kU8 && q.numel() == x.numel(),
                   "Fp8Quantize: on a device q holds codes (u8)");
  Quantize(x, state, role, transpose, static_cast<unsigned char*>(q.data()));
}

// Codes of x in a scratch slot.
unsigned char* CastCodes(const Tensor& x, const Tensor& state, int role, bool transpose, int slot) {
  auto* q = static_cast<unsigned char*>(Scratch(static_cast<size_t>(x.numel()), slot));
  Quantize(x, state, role, transpose, q);
  return q;
}

// One operand of a GEMM: codes, their format and their descale (a device
// pointer).
struct Operand {
  const unsigned char* codes;
  bool e5m2;
  const float* descale;
};

Operand OperandOf(const unsigned char* codes, const Tensor& state, int role) {
  return {codes, Gradient(role), state.f32() + ops::kFp8ScaleInverseAt + role};
}

cudaDataType Fp8Type(bool e5m2) { return e5m2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3; }

struct Key {
  long long m, n, k;
  bool a_e5m2, b_e5m2, bias;
  DType d;
  bool operator<(const Key& o) const {
    return std::tie(m, n, k, a_e5m2, b_e5m2, bias, d) <
           std::tie(o.m, o.n, o.k, o.a_e5m2, o.b_e5m2, o.bias, o.d);
  }
};

struct Plan {
  bool ok = false;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
};

// Column-major, D^T [n, m] = A^T B with A = Y stored [k, n] and B = X
// stored [k, m]: the row-major D [m, n] = X Y^T of the callers.
const Plan& PlanFor(const Key& key) {
  thread_local std::map<Key, Plan> plans;
  if (auto it = plans.find(key); it != plans.end()) return it->second;
  Plan p;
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  const cublasLtEpilogue_t epilogue = key.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  const cudaDataType bias_type = CUDA_R_16BF;
  const int8_t fast_accumulation = 0;  // every partial sum in fp32, as the CPU's
  CUBLAS_CHECK(cublasLtMatmulDescCreate(&p.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof(epilogue)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
                                              &fast_accumulation, sizeof(fast_accumulation)));
  if (key.bias) {
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE,
                                                &bias_type, sizeof(bias_type)));
  }
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.a, Fp8Type(key.a_e5m2), key.k, key.n, key.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.b, Fp8Type(key.b_e5m2), key.k, key.m, key.k));
  CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p.d, CublasType(key.d), key.n, key.m, key.n));
  cublasLtMatmulPreference_t pref = nullptr;
  CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                    &kLtMaxWorkspace, sizeof(kLtMaxWorkspace)));
  cublasLtMatmulHeuristicResult_t result{};
  int returned = 0;
  const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(LtHandle(), p.op, p.a, p.b, p.d, p.d,
                                                               pref, 1, &result, &returned);
  CUBLAS_CHECK(cublasLtMatmulPreferenceDestroy(pref));
  p.ok = status == CUBLAS_STATUS_SUCCESS && returned > 0;
  if (p.ok) {
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  }
  return plans.emplace(key, p).first->second;
}

bool Aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

bool LtGemm(long long m, long long n, long long k, Operand x, Operand y, const void* bias, void* d,
            DType d_type) {
  if (k % 16 != 0 || n % 16 != 0 || m % 16 != 0 || (x.e5m2 && y.e5m2)) return false;
  if (!Aligned(x.codes) || !Aligned(y.codes) || !Aligned(d) || (bias && !Aligned(bias)))
    return false;
  const Plan& p = PlanFor({m, n, k, y.e5m2, x.e5m2, bias != nullptr, d_type});
  if (!p.ok) return false;
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                              &y.descale, sizeof(y.descale)));
  CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                              &x.descale, sizeof(x.descale)));
  if (bias != nullptr) {
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias,
                                                sizeof(bias)));
  }
  void* workspace = p.workspace > 0 ? Scratch(p.workspace, kScratchWorkspace) : nullptr;
  const float one = 1.0f, zero = 0.0f;
  CUBLAS_CHECK(cublasLtMatmul(LtHandle(), p.op, &one, y.codes, p.a, x.codes, p.b, &zero, d, p.d, d,
                              p.d, &p.algo, workspace, p.workspace, Stream()));
  return true;
}

__global__ void WidenKernel(const unsigned char* codes, long long n, bool e5m2,
                            __nv_bfloat16* out) {
  const __nv_fp8_interpretation_t format = e5m2 ? __NV_E5M2 : __NV_E4M3;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const __half h(__nv_cvt_fp8_to_halfraw(codes[i], format));
    out[i] = __float2bfloat16_rn(__half2float(h));  // exact: FP8 values fit both
  }
}

const __nv_bfloat16* Widened(Operand o, long long n, int slot) {
  auto* out = static_cast<__nv_bfloat16*>(Scratch(static_cast<size_t>(n) * 2, slot));
  WidenKernel<<<Blocks(n), 256, 0, Stream()>>>(o.codes, n, o.e5m2, out);
  CUDA_CHECK_LAUNCH();
  return out;
}

// d = acc * (descale_x * descale_y) + bias (bf16), in d's type.
__global__ void DescaleKernel(const float* acc, long long rows, long long cols, const float* dx,
                              const float* dy, const __nv_bfloat16* bias, void* d, DType d_type) {
  const float alpha = *dx * *dy;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < rows * cols;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    float v = acc[i] * alpha;
    if (bias != nullptr) v += __bfloat162float(bias[i % cols]);
    detail::StoreAs(d, d_type, i, v);
  }
}

// Row-major d [m, n] = (x [m, k] y [n, k]^T) * descales + bias [n].
void Gemm(long long m, long long n, long long k, Operand x, Operand y, const void* bias, void* d,
          DType d_type) {
  if (LtGemm(m, n, k, x, y, bias, d, d_type)) return;
  const __nv_bfloat16* wx = Widened(x, m * k, kScratchStaged0 + 1);
  const __nv_bfloat16* wy = Widened(y, n * k, kScratchStaged0 + 2);
  auto* acc =
      static_cast<float*>(Scratch(static_cast<size_t>(m * n) * sizeof(float), kScratchPadded));
  GemmStridedBatchedEx(false, true, m, n, k, 1.0f, wx, m * k, wy, n * k, 0.0f, acc, m * n, 1,
                       DType::kBF16, DType::kF32);
  DescaleKernel<<<Blocks(m * n), 256, 0, Stream()>>>(
      acc, m, n, x.descale, y.descale, static_cast<const __nv_bfloat16*>(bias), d, d_type);
  CUDA_CHECK_LAUNCH();
}

void RoundToBf16IfWide(const Tensor& t) {
  if (!t.empty() && t.dtype() == DType::kF32) RoundToPrecision(DType::kBF16, t, t);
}

void Fp8LinearForward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                      const Tensor& state) {
  const long long out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(y.numel() == rows * out && (y.dtype() == DType::kF32 || y.dtype() == DType::kBF16));
  MLPERF_CHECK(state.numel() == ops::kFp8StateFloats);
  const Tensor x2(x.data(), {rows, in}, x.dtype(), x.device());
  const Operand qx = OperandOf(CastCodes(x2, state, ops::kFp8Input, false, kScratchOperand0), state,
                               ops::kFp8Input);
  const Operand qw = OperandOf(CastCodes(w, state, ops::kFp8Weight, false, kScratchOperand0 + 1),
                               state, ops::kFp8Weight);
  void* b16 = nullptr;
  if (!bias.empty()) {
    b16 = Scratch(static_cast<size_t>(out) * 2, kScratchStaged0);
    ops::Cast(bias, Tensor(b16, {out}, DType::kBF16, bias.device()));
  }
  Gemm(rows, out, in, qx, qw, b16, y.data(), y.dtype());
  RoundToBf16IfWide(y);
}

void Fp8LinearBackward(const Tensor& x, const Tensor& w, const Tensor& dy, const Tensor& dx,
                       const Tensor& dw, const Tensor& dbias, const Tensor& state) {
  const long long out = w.dim(0), in = w.dim(1), rows = x.numel() / in;
  MLPERF_CHECK(dy.numel() == rows * out && (dw.empty() || dw.numel() == out * in));
  MLPERF_CHECK(state.numel() == ops::kFp8StateFloats);
  const Tensor x2(x.data(), {rows, in}, x.dtype(), x.device());
  const Tensor dy2(dy.data(), {rows, out}, dy.dtype(), dy.device());
  const int g = ops::kFp8GradOutput;
  if (!dx.empty()) {
    // dx [rows, in] = dy [rows, out] (w^T [in, out])^T
    const Operand qdy = OperandOf(CastCodes(dy2, state, g, false, kScratchOperand0), state, g);
    const Operand qwt = OperandOf(CastCodes(w, state, ops::kFp8Weight, true, kScratchOperand0 + 1),
                                  state, ops::kFp8Weight);
    Gemm(rows, in, out, qdy, qwt, nullptr, dx.data(), dx.dtype());
    RoundToBf16IfWide(dx);
  }
  if (!dw.empty()) {
    // dw [out, in] = dy^T [out, rows] (x^T [in, rows])^T
    const Operand qdyt = OperandOf(CastCodes(dy2, state, g, true, kScratchOperand0 + 2), state, g);
    const Operand qxt = OperandOf(CastCodes(x2, state, ops::kFp8Input, true, kScratchStaged0),
                                  state, ops::kFp8Input);
    MLPERF_CHECK(dw.dtype() == DType::kF32);
    Gemm(out, in, rows, qdyt, qxt, nullptr, dw.data(), DType::kF32);
    RoundToBf16IfWide(dw);
  }
  if (!dbias.empty()) {
    BiasGradient(dy2, dbias.f32(), rows, out);
    RoundToBf16IfWide(dbias);
  }
}

// One warp per role: the step's amax (the largest over the ranks) pushed
// into the history (newest first), then the scale from the history's
// largest, as the CPU's twin.
__global__ void UpdateKernel(float* s, const float* amax, long long stride, long long ranks) {
  constexpr int kPer = ops::kFp8History / 32;
  const int role = threadIdx.x / 32, lane = threadIdx.x % 32;
  float step = 0.0f;
  if (lane == 0) {
    for (long long r = 0; r < ranks; ++r) {
      const float a = amax[r * stride + role];
      step = a > step || isnan(a) ? a : step;
    }
  }
  step = __shfl_sync(0xffffffffu, step, 0);
  float* history = s + ops::kFp8HistoryAt + role * ops::kFp8History;
  float old[kPer];
  for (int j = 0; j < kPer; ++j) old[j] = history[lane * kPer + j];
  __syncwarp();
  float most = 0.0f;
  bool finite = true;
  for (int j = 0; j < kPer; ++j) {
    const int to = lane * kPer + j + 1;
    if (to >= ops::kFp8History) continue;  // the oldest leaves
    history[to] = old[j];
    most = fmaxf(most, old[j]);
    finite = finite && isfinite(old[j]);
  }
  if (lane == 0) {
    history[0] = step;
    most = fmaxf(most, step);
    finite = finite && isfinite(step);
  }
  for (int offset = 16; offset > 0; offset /= 2)
    most = fmaxf(most, __shfl_xor_sync(0xffffffffu, most, offset));
  finite = __all_sync(0xffffffffu, finite);
  __syncwarp();
  if (lane != 0) return;
  if (finite && most > 0.0f) {
    const float scale = (role == ops::kFp8GradOutput ? 57344.0f : 448.0f) / most;
    s[ops::kFp8ScaleAt + role] = scale;
    s[ops::kFp8ScaleInverseAt + role] = 1.0f / scale;
  }
  s[ops::kFp8AmaxAt + role] = 0.0f;
}

void Fp8UpdateScaling(const Tensor& state, const float* amax, int64_t stride, int64_t ranks) {
  MLPERF_CHECK(state.numel() == ops::kFp8StateFloats && ranks >= 1);
  UpdateKernel<<<1, 32 * ops::kFp8Roles, 0, Stream()>>>(state.f32(), amax, stride, ranks);
  CUDA_CHECK_LAUNCH();
}

}  // namespace

MLPERF_REGISTER_KERNEL(Fp8Quantize, Cuda, Fp8Quantize);
MLPERF_REGISTER_KERNEL(Fp8LinearForward, Cuda, Fp8LinearForward);
MLPERF_REGISTER_KERNEL(Fp8LinearBackward, Cuda, Fp8LinearBackward);
MLPERF_REGISTER_KERNEL(Fp8UpdateScaling, Cuda, Fp8UpdateScaling);

}  // namespace mlperf::cuda
