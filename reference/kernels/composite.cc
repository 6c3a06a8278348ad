#include "reference/kernels/composite.h"

#include <cmath>

#include "base/check.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/dispatch_backend.h"
#include "reference/kernels/precision.h"
#include "reference/kernels/precision_operands.h"

#ifdef MLPERF_HAVE_CUDA
#include "reference/kernels/cuda/attention_typed.h"
#endif

namespace mlperf::ops {

using core::Tensor;

namespace {

// The first shape.numel() elements of a scratch tensor that may be larger.
Tensor View(const Tensor& workspace, core::Shape shape) {
  MLPERF_CHECK(workspace.numel() >= shape.numel());
  return Tensor(workspace.data(), shape, workspace.dtype(), workspace.device());
}

}  // namespace

void ConvTransposeForward(const ConvGeometry& g, const Tensor& x, const Tensor& w, const Tensor& y,
                          const Tensor& workspace) {
  ConvBackwardData(g, x, w, y, workspace);
}

void ConvTransposeBackwardData(const ConvGeometry& g, const Tensor& dy, const Tensor& w,
                               const Tensor& dx, const Tensor& workspace) {
  ConvForward(g, dy, w, dx, workspace);
}

void ConvTransposeBackwardWeight(const ConvGeometry& g, const Tensor& x, const Tensor& dy,
                                 const Tensor& dw, const Tensor& workspace) {
  // The convolution's "input" is the transposed conv's output gradient and its
  // "output gradient" the transposed conv's input.
  ConvBackwardWeight(g, dy, x, dw, workspace);
}

void AttentionForward(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& mask, const Tensor& probs, const Tensor& out,
                      const Tensor& workspace) {
  if (p.typed && !p.causal && !p.packed && InPrecisionType(q))
    return MLPERF_CUDA_TWIN(
        AttentionForwardTyped(p, ComputePrecision(), q, k, v, mask, probs, out, workspace));
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3);
  const int64_t bh = b * h;
  MLPERF_CHECK(probs.numel() == bh * t * t && workspace.numel() >= bh * t * t);
  const core::Device device = q.device();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const Tensor scores = View(workspace, {b, h, t, t});
  GemmStridedBatched(device, false, true, t, t, d, scale, q.f32(), t * d, k.f32(), t * d, 0.0f,
                     scores.f32(), t * t, bh);
  if (!mask.empty() && p.packed) AddSequenceMask(scores, mask);
  if (!mask.empty() && !p.packed) AddKeyPaddingMask(scores, mask);
  if (p.causal) CausalMask(scores);
  SoftmaxForward(scores.Reshaped({bh * t, t}), probs.Reshaped({bh * t, t}));
  const float* attn = probs.f32();
  if (p.dropout > 0.0f) {
    DropoutForward(p.dropout, p.seed, p.offset, probs.Reshaped({bh * t * t}),
                   View(workspace, {bh * t * t}), p.offset_base);
    attn = workspace.f32();
  }
  GemmStridedBatched(device, false, false, t, d, t, 1.0f, attn, t * t, v.f32(), t * d, 0.0f,
                     out.f32(), t * d, bh);
}

void AttentionBackward(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& probs, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                       const Tensor& dv, const Tensor& workspace) {
  if (p.typed && !p.causal && !p.packed && InPrecisionType(q))
    return MLPERF_CUDA_TWIN(
        AttentionBackwardTyped(p, ComputePrecision(), q, k, v, probs, dout, dq, dk, dv, workspace));
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3);
  const int64_t bh = b * h;
  MLPERF_CHECK(workspace.numel() >= bh * t * t);
  const core::Device device = q.device();
  const Tensor flat_ws = View(workspace, {bh * t * t});
  // dV = dropout(P)^T dO.
  const float* attn = probs.f32();
  if (p.dropout > 0.0f) {
    DropoutForward(p.dropout, p.seed, p.offset, probs.Reshaped({bh * t * t}), flat_ws,
                   p.offset_base);
    attn = workspace.f32();
  }
  GemmStridedBatched(device, true, false, t, d, t, 1.0f, attn, t * t, dout.f32(), t * d, 0.0f,
                     dv.f32(), t * d, bh);
  // dP = dropout'(dO V^T), then through the softmax (in place).
  GemmStridedBatched(device, false, true, t, t, d, 1.0f, dout.f32(), t * d, v.f32(), t * d, 0.0f,
                     workspace.f32(), t * t, bh);
  if (p.dropout > 0.0f)
    DropoutBackward(p.dropout, p.seed, p.offset, flat_ws, flat_ws, p.offset_base);
  SoftmaxBackward(probs.Reshaped({bh * t, t}), View(workspace, {bh * t, t}),
                  View(workspace, {bh * t, t}));
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  GemmStridedBatched(device, false, false, t, d, t, scale, workspace.f32(), t * t, k.f32(), t * d,
                     0.0f, dq.f32(), t * d, bh);
  GemmStridedBatched(device, true, false, t, d, t, scale, workspace.f32(), t * t, q.f32(), t * d,
                     0.0f, dk.f32(), t * d, bh);
}

}  // namespace mlperf::ops
