#include <cmath>

#include "reference/kernels/cuda/attention_typed.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/softmax.h"
#include "reference/kernels/ops/elementwise.h"

namespace mlperf::cuda {
namespace {

using core::DType;
using core::Tensor;

struct Dims {
  int64_t bh, t, d;
};

Dims DimsOf(const Tensor& q, const Tensor& probs, const Tensor& workspace) {
  MLPERF_CHECK(q.shape().rank() == 4);
  const Dims s{q.dim(0) * q.dim(1), q.dim(2), q.dim(3)};
  MLPERF_CHECK(probs.numel() == s.bh * s.t * s.t && workspace.numel() >= s.bh * s.t * s.t);
  MLPERF_CHECK(workspace.dtype() == DType::kF32 && probs.dtype() == DType::kF32);
  return s;
}

// x in `t`: itself when stored in it, else converted in scratch `slot` (the
// operand slots ops:: uses for its own conversions; none is live across
// this op).
Tensor Converted(const Tensor& x, DType t, int slot) {
  if (x.dtype() == t) return x;
  void* data =
      Scratch(static_cast<size_t>(x.numel()) * core::DTypeSize(t), kScratchOperand0 + slot);
  const Tensor out(data, x.shape(), t, core::Device::kCuda);
  ops::Cast(x, out);
  return out;
}

// The workspace's first `count` elements seen as `t`.
Tensor Typed(const Tensor& workspace, int64_t count, DType t) {
  return Tensor(workspace.data(), {count}, t, core::Device::kCuda);
}

// c = alpha op(a) op(b) per head, from operands of `t`, rounded to it: written
// in `t` where c is stored in it, else in fp32 and rounded in place.
void GemmRounded(bool ta, bool tb, const Dims& s, int64_t m, int64_t n, int64_t k, float alpha,
                 const Tensor& a, int64_t sa, const Tensor& b, int64_t sb, const Tensor& c,
                 int64_t sc, DType t) {
  MLPERF_CHECK(c.dtype() == t || c.dtype() == DType::kF32);
  GemmStridedBatchedEx(ta, tb, m, n, k, alpha, a.data(), sa, b.data(), sb, 0.0f, c.data(), sc, s.bh,
                       t, c.dtype());
  if (c.dtype() == DType::kF32) RoundToPrecision(t, c, c);
}

}  // namespace

void AttentionForwardTyped(const AttentionParams& p, DType t, const Tensor& q, const Tensor& k,
                           const Tensor& v, const Tensor& mask, const Tensor& probs,
                           const Tensor& out, const Tensor& workspace) {
  const Dims s = DimsOf(q, probs, workspace);
  const int64_t tt = s.t * s.t, td = s.t * s.d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  const Tensor qt = Converted(q, t, 0), kt = Converted(k, t, 1), vt = Converted(v, t, 2);
  const Tensor scores(workspace.data(), probs.shape(), t, core::Device::kCuda);
  GemmStridedBatchedEx(false, true, s.t, s.t, s.d, scale, qt.data(), td, kt.data(), td, 0.0f,
                       scores.data(), tt, s.bh, t, t);
  // The dropped probabilities take the scores' place as they are read.
  const Tensor dropped = Typed(workspace, s.bh * tt, t);
  MaskedSoftmax(scores, mask, probs, p, dropped);
  GemmRounded(false, false, s, s.t, s.d, s.t, 1.0f, dropped, tt, vt, td, out, td, t);
}

void AttentionBackwardTyped(const AttentionParams& p, DType t, const Tensor& q, const Tensor& k,
                            const Tensor& v, const Tensor& probs, const Tensor& dout,
                            const Tensor& dq, const Tensor& dk, const Tensor& dv,
                            const Tensor& workspace) {
  const Dims s = DimsOf(q, probs, workspace);
  const int64_t tt = s.t * s.t, td = s.t * s.d;
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.d));
  const Tensor flat = Typed(workspace, s.bh * tt, t), flat_probs = probs.Reshaped({s.bh * tt});
  const Tensor doutt = Converted(dout, t, 0), vt = Converted(v, t, 1);
  // dV = dropout(P)^T dO, the mask drawn again.
  if (p.dropout > 0.0f) {
    ops::DropoutForward(p.dropout, p.seed, p.offset, flat_probs, flat, p.offset_base);
  } else {
    ops::Cast(flat_probs, flat);
  }
  GemmRounded(true, false, s, s.t, s.d, s.t, 1.0f, flat, tt, doutt, td, dv, td, t);
  // dA = dO V^T, then dS through the dropout and the softmax, in place.
  GemmStridedBatchedEx(false, true, s.t, s.t, s.d, 1.0f, doutt.data(), td, vt.data(), td, 0.0f,
                       flat.data(), tt, s.bh, t, t);
  DropoutSoftmaxBackward(p, probs, flat.Reshaped(probs.shape()), flat.Reshaped(probs.shape()));
  const Tensor kt = Converted(k, t, 1), qt = Converted(q, t, 2);
  GemmRounded(false, false, s, s.t, s.d, s.t, scale, flat, tt, kt, td, dq, td, t);
  GemmRounded(true, false, s, s.t, s.d, s.t, scale, flat, tt, qt, td, dk, td, t);
}

}  // namespace mlperf::cuda
