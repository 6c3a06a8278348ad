// CUDA twins of cpu/attention.h: BERT's additive key padding mask and the
// rows <-> heads permutations.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cuda {

void AddKeyPaddingMask(const core::Tensor& scores, const core::Tensor& mask);
void SplitHeads(const core::Tensor& rows, int64_t column, const core::Tensor& heads);
void MergeHeads(const core::Tensor& heads, const core::Tensor& rows, int64_t column);

}  // namespace mlperf::cuda
