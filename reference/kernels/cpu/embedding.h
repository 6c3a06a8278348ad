// Embedding lookup: y[i, :] = table[ids[i], :], ids int32.
#pragma once

#include "reference/core/tensor.h"

namespace mlperf::cpu {

void EmbeddingForward(const core::Tensor& ids, const core::Tensor& table, const core::Tensor& y);
// dtable is overwritten: zero, then rows of dy summed at their ids.
void EmbeddingBackward(const core::Tensor& ids, const core::Tensor& dy, const core::Tensor& dtable);

}  // namespace mlperf::cpu
