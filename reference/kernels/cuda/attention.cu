#include <cmath>

#include "reference/kernels/cuda/attention.h"
#include "reference/kernels/cuda/check.h"
#include "reference/kernels/cuda/context.h"
#include "reference/kernels/cuda/elementwise.h"
#include "reference/kernels/cuda/gemm.h"
#include "reference/kernels/cuda/softmax.h"

namespace mlperf::cuda {
namespace {

using core::Tensor;

// BERT's additive mask: keys that are padding get -10000 before the softmax.
__global__ void AddKeyMask(float* scores, const float* mask, int64_t heads, int64_t seq,
                           int64_t count) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t key = i % seq, batch = i / (heads * seq * seq);
    scores[i] += (1.0f - mask[batch * seq + key]) * -10000.0f;
  }
}

}  // namespace

void AttentionForward(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                      const Tensor& mask, const Tensor& probs, const Tensor& out,
                      const Tensor& workspace) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3);
  const int64_t bh = b * h;
  MLPERF_CHECK(probs.numel() == bh * t * t && workspace.numel() >= bh * t * t);
  MLPERF_CHECK(mask.numel() == b * t);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  GemmStridedBatched(false, true, t, t, d, scale, q.f32(), t * d, k.f32(), t * d, 0.0f,
                     workspace.f32(), t * t, bh);
  AddKeyMask<<<Blocks(bh * t * t), 256, 0, Stream()>>>(workspace.f32(), mask.f32(), h, t,
                                                       bh * t * t);
  CUDA_CHECK_LAUNCH();
  SoftmaxForward(workspace.Reshaped({bh * t, t}), probs.Reshaped({bh * t, t}));
  const float* attn = probs.f32();
  if (p.dropout > 0.0f) {
    DropoutForward(p.dropout, p.seed, p.offset, probs.Reshaped({bh * t * t}),
                   workspace.Reshaped({bh * t * t}));
    attn = workspace.f32();
  }
  GemmStridedBatched(false, false, t, d, t, 1.0f, attn, t * t, v.f32(), t * d, 0.0f, out.f32(),
                     t * d, bh);
}

void AttentionBackward(const AttentionParams& p, const Tensor& q, const Tensor& k, const Tensor& v,
                       const Tensor& probs, const Tensor& dout, const Tensor& dq, const Tensor& dk,
                       const Tensor& dv, const Tensor& workspace) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3);
  const int64_t bh = b * h;
  MLPERF_CHECK(workspace.numel() >= bh * t * t);
  const Tensor flat_ws = workspace.Reshaped({bh * t * t});
  // dV = dropout(P)^T dO.
  const float* attn = probs.f32();
  if (p.dropout > 0.0f) {
    DropoutForward(p.dropout, p.seed, p.offset, probs.Reshaped({bh * t * t}), flat_ws);
    attn = workspace.f32();
  }
  GemmStridedBatched(true, false, t, d, t, 1.0f, attn, t * t, dout.f32(), t * d, 0.0f, dv.f32(),
                     t * d, bh);
  // dP = dropout'(dO V^T), then through the softmax (in place).
  GemmStridedBatched(false, true, t, t, d, 1.0f, dout.f32(), t * d, v.f32(), t * d, 0.0f,
                     workspace.f32(), t * t, bh);
  if (p.dropout > 0.0f) DropoutBackward(p.dropout, p.seed, p.offset, flat_ws, flat_ws);
  SoftmaxBackward(probs.Reshaped({bh * t, t}), workspace.Reshaped({bh * t, t}),
                  workspace.Reshaped({bh * t, t}));
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  GemmStridedBatched(false, false, t, d, t, scale, workspace.f32(), t * t, k.f32(), t * d, 0.0f,
                     dq.f32(), t * d, bh);
  GemmStridedBatched(true, false, t, d, t, scale, workspace.f32(), t * t, q.f32(), t * d, 0.0f,
                     dk.f32(), t * d, bh);
}

}  // namespace mlperf::cuda
