#include "reference/kernels/blocked_attention.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/attention.h"
#include "reference/kernels/ops/elementwise.h"
#include "reference/kernels/ops/softmax.h"

namespace mlperf::ops {
namespace {

using core::Tensor;

// One block: query rows [first, first + rows) against keys [0, keys).
struct Block {
  int64_t first = 0, rows = 0, keys = 0;
};

Block BlockAt(int64_t first, int64_t block, int64_t seq, bool causal) {
  const int64_t rows = std::min(block, seq - first);
  return {first, rows, causal ? first + rows : seq};
}

Tensor View(const Tensor& workspace, int64_t offset, core::Shape shape) {
  MLPERF_CHECK(workspace.numel() >= offset + shape.numel());
  return Tensor(workspace.f32() + offset, shape, core::DType::kF32, workspace.device());
}

void CheckShapes(const AttentionParams& p, int64_t block, const Tensor& q, const Tensor& k,
                 const Tensor& v, const Tensor& workspace) {
  MLPERF_CHECK_MSG(p.dropout == 0.0f, "blocked attention has no dropout");
  MLPERF_CHECK(block > 0 && q.shape().rank() == 4 && k.shape() == q.shape() &&
               v.shape() == q.shape());
  MLPERF_CHECK(workspace.numel() >= BlockedAttentionWorkspace(q.dim(0), q.dim(1), q.dim(2), block));
}

// The block's probabilities [b, h, rows, keys] into `probs`, its scores
// into `scores` on the way.
void BlockProbabilities(const AttentionParams& p, const Block& blk, const Tensor& q,
                        const Tensor& k, const Tensor& scores, const Tensor& probs) {
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  GemmStridedBatched(q.device(), false, true, blk.rows, blk.keys, d, scale, q.f32() + blk.first * d,
                     t * d, k.f32(), t * d, 0.0f, scores.f32(), blk.rows * blk.keys, b * h);
  if (p.causal) CausalMask(scores);
  SoftmaxForward(scores.Reshaped({b * h * blk.rows, blk.keys}),
                 probs.Reshaped({b * h * blk.rows, blk.keys}));
}

}  // namespace

int64_t BlockedAttentionWorkspace(int64_t batch, int64_t heads, int64_t seq, int64_t block) {
  return 2 * batch * heads * std::min(block, seq) * seq;
}

void BlockedAttentionForward(const AttentionParams& p, int64_t block, const Tensor& q,
                             const Tensor& k, const Tensor& v, const Tensor& out,
                             const Tensor& workspace) {
  CheckShapes(p, block, q, k, v, workspace);
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3);
  const int64_t half = workspace.numel() / 2;
  for (int64_t first = 0; first < t; first += block) {
    const Block blk = BlockAt(first, block, t, p.causal);
    const Tensor probs = View(workspace, 0, {b, h, blk.rows, blk.keys});
    BlockProbabilities(p, blk, q, k, View(workspace, half, probs.shape()), probs);
    GemmStridedBatched(q.device(), false, false, blk.rows, d, blk.keys, 1.0f, probs.f32(),
                       blk.rows * blk.keys, v.f32(), t * d, 0.0f, out.f32() + blk.first * d, t * d,
                       b * h);
  }
}

void BlockedAttentionBackward(const AttentionParams& p, int64_t block, const Tensor& q,
                              const Tensor& k, const Tensor& v, const Tensor& dout,
                              const Tensor& dq, const Tensor& dk, const Tensor& dv,
                              const Tensor& workspace) {
  CheckShapes(p, block, q, k, v, workspace);
  const int64_t b = q.dim(0), h = q.dim(1), t = q.dim(2), d = q.dim(3);
  const core::Device device = q.device();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // Every block adds to the gradients of the keys and values it saw.
  Fill(dk, 0.0f);
  Fill(dv, 0.0f);
  const int64_t half = workspace.numel() / 2;
  for (int64_t first = 0; first < t; first += block) {
    const Block blk = BlockAt(first, block, t, p.causal);
    const int64_t area = blk.rows * blk.keys;
    const Tensor probs = View(workspace, 0, {b, h, blk.rows, blk.keys});
    const Tensor dscores = View(workspace, half, {b * h * blk.rows, blk.keys});
    BlockProbabilities(p, blk, q, k, dscores.Reshaped(probs.shape()), probs);
    const float* dout_block = dout.f32() + blk.first * d;
    // dV[:keys] += P^T dO; dP = dO V[:keys]^T, through the softmax.
    GemmStridedBatched(device, true, false, blk.keys, d, blk.rows, 1.0f, probs.f32(), area,
                       dout_block, t * d, 1.0f, dv.f32(), t * d, b * h);
    GemmStridedBatched(device, false, true, blk.rows, blk.keys, d, 1.0f, dout_block, t * d, v.f32(),
                       t * d, 0.0f, dscores.f32(), area, b * h);
    SoftmaxBackward(probs.Reshaped({b * h * blk.rows, blk.keys}), dscores, dscores);
    // dQ = scale dS K[:keys]; dK[:keys] += scale dS^T Q.
    GemmStridedBatched(device, false, false, blk.rows, d, blk.keys, scale, dscores.f32(), area,
                       k.f32(), t * d, 0.0f, dq.f32() + blk.first * d, t * d, b * h);
    GemmStridedBatched(device, true, false, blk.keys, d, blk.rows, scale, dscores.f32(), area,
                       q.f32() + blk.first * d, t * d, 1.0f, dk.f32(), t * d, b * h);
  }
}

}  // namespace mlperf::ops
