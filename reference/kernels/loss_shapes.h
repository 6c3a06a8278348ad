// Scratch sizes of the loss kernels, shared by both backends.
#pragma once

#include <cstdint>

namespace mlperf {

// 3D U-Net Dice + cross-entropy: softmax probabilities of every voxel plus
// per-sample, per-class intersection and union sums.
inline int64_t DiceCrossEntropyWorkspaceElements(int64_t n, int64_t c, int64_t spatial) {
  return n * c * spatial + 2 * n * c;
}

}  // namespace mlperf
