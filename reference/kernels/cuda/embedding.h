// CUDA twin of cpu/embedding.h: y[i, :] = table[ids[i], :], ids int32.
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cuda {

void EmbeddingForward(const core::Tensor& ids, const core::Tensor& table, const core::Tensor& y);
// dtable is overwritten: zero, then rows of dy summed at their ids. One
// thread per feature walks the ids in order (the CPU twin's order), so the
// sums are deterministic and bit-identical to the CPU's, without atomics.
// With accumulate, dtable is not zeroed first: the sums add to it (a table
// shared with a tied output layer, which wrote its gradient there).
void EmbeddingBackward(const core::Tensor& ids, const core::Tensor& dy, const core::Tensor& dtable,
                       bool accumulate = false);

}  // namespace mlperf::cuda
