// Embedding lookup: y[i, :] = table[ids[i], :], ids int32.
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cpu {

void EmbeddingForward(const core::Tensor& ids, const core::Tensor& table, const core::Tensor& y);
// dtable is overwritten: zero, then rows of dy summed at their ids.
// With accumulate, dtable is not zeroed first: the sums add to it (a table
// shared with a tied output layer, which wrote its gradient there).
void EmbeddingBackward(const core::Tensor& ids, const core::Tensor& dy, const core::Tensor& dtable,
                       bool accumulate = false);

}  // namespace mlperf::cpu
