// Losses with their gradients. Each writes the scalar loss into a 1-element
// tensor on the op's device (no host round-trip on the GPU) and the gradient
// of that loss with respect to the logits.
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/loss_shapes.h"

namespace mlperf::cpu {

using mlperf::DiceCrossEntropyWorkspaceElements;

}  // namespace mlperf::cpu
