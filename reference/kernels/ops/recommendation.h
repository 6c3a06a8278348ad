// The recommendation model's ops (DLRM-dcnv2), declared once (kernels/op.h):
// multi-hot embedding bags pooled by sum, their sparse gradient and the
// exact Adagrad step on the rows a batch touched, the DCN v2 cross layer's
// combination, and the binary cross-entropy on logits. Kernels in
// cpu/recommendation.cc and cuda/recommendation.cu; tensors fp32, ids int32.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// Which rows of a table the `table` tensor holds: [first_row, first_row +
// rows) of full_rows (a row-wise shard on one rank); full_rows 0: the whole
// table. Ids of the table's other rows belong to other ranks' shards and
// are skipped; an id outside [0, full_rows) is a data error.
struct TableShard {
  int64_t first_row = 0;
  int64_t rows = 0;
  int64_t full_rows = 0;
};

// y[b, column + d] = sum over h of table[ids[b, h], d]: ids [B, H] (H ids per
// sample, the table's multi-hot size), table [R, D], y [B, W] with
// column + D <= W; over a shard, the sum of the ids it holds (0 for none).
// The other columns of y are left as they are.
inline Op<void(const core::Tensor& ids, const core::Tensor& table, const core::Tensor& y,
               int64_t column, TableShard shard)>
    EmbeddingBagSumForward{"EmbeddingBagSumForward"};

// The table's gradient as sparse rows: the distinct ids, ascending, in
// rows (int32, at least B * H), the sum of dy[b, column:column + D] over the
// samples b that hold each (once per occurrence) in grads ([>= B * H, D]),
// and how many rows in count (int32 [1]). Never a pass over the table. Over
// a shard, only its ids, as rows of the shard (id - first_row).
inline Op<void(const core::Tensor& ids, const core::Tensor& dy, int64_t column, TableShard shard,
               const core::Tensor& rows, const core::Tensor& grads, const core::Tensor& count)>
    EmbeddingBagSumBackward{"EmbeddingBagSumBackward"};

// y[:, y_column + j] = x[:, x_column + j] for j < width (+= with
// `accumulate`): x [B, Wx] and y [B, Wy], fp32. Packs and unpacks the pooled
// embeddings a sharded model exchanges.
inline Op<void(const core::Tensor& x, int64_t x_column, const core::Tensor& y, int64_t y_column,
               int64_t width, bool accumulate)>
    CopyColumns{"CopyColumns"};

// Adagrad (torch.optim.Adagrad with lr_decay 0, weight decay 0, FBGEMM's
// exact Adagrad) on the first count[0] of those rows only:
//   sum[r] += g^2;  table[r] -= lr * g / (sqrt(sum[r]) + epsilon)
// sum has the table's shape (the accumulator, initially 0).
inline Op<void(float lr, float epsilon, const core::Tensor& rows, const core::Tensor& grads,
               const core::Tensor& count, const core::Tensor& table, const core::Tensor& sum)>
    SparseAdagradStep{"SparseAdagradStep"};

// The DCN v2 cross layer's combination, y = x0 * z + x (elementwise, all
// [B, F]), and its gradient: dz = dy * x0 and dx0 += dy * z (dx = dy).
inline Op<void(const core::Tensor& x0, const core::Tensor& z, const core::Tensor& x,
               const core::Tensor& y)>
    CrossForward{"CrossForward"};
inline Op<void(const core::Tensor& x0, const core::Tensor& z, const core::Tensor& dy,
               const core::Tensor& dx0, const core::Tensor& dz)>
    CrossBackward{"CrossBackward"};

// torch.nn.BCEWithLogitsLoss (mean): loss = mean over b of
// max(z, 0) - z * y + log(1 + exp(-|z|)) for logits z [B] and labels y [B]
// (fp32, 0 or 1); dlogits = (sigmoid(z) - y) / B.
inline Op<void(const core::Tensor& logits, const core::Tensor& labels, const core::Tensor& loss,
               const core::Tensor& dlogits)>
    BinaryCrossEntropyWithLogits{"BinaryCrossEntropyWithLogits"};

}  // namespace mlperf::ops
