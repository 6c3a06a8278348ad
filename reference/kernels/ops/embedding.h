// Embedding lookup and its gradient, declared once (kernels/op.h); kernels
// in cpu/embedding.cc and cuda/embedding.cu.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// y[i] = table[ids[i]] (ids int32).
inline Op<void(const core::Tensor& ids, const core::Tensor& table, const core::Tensor& y)>
    EmbeddingForward{"EmbeddingForward"};
// dtable is overwritten: zero, then rows of dy summed at their ids. With
// accumulate, dtable is not zeroed first: the sums add to it (a table shared
// with a tied output layer, which wrote its gradient there).
inline Op<void(const core::Tensor& ids, const core::Tensor& dy, const core::Tensor& dtable,
               bool accumulate)>
    EmbeddingBackward{"EmbeddingBackward"};

}  // namespace mlperf::ops
