// CUDA twins of cpu/pool.h: own kernels rather than cuDNN pooling, because
// ResNet's max pool uses TF "same" padding (0 before, 1 after on 112x112),
// which legacy cuDNN cannot express, and because the CPU twin's exact tie
// rule (the first maximum of a window receives the gradient) and its backward
// signature (x, not y) are then kept. Backwards gather over the windows that
// contain each input, so they are deterministic (no atomics). Activations may
// be channels-last (kNHWC/kNDHWC tags) and fp32, bf16 or fp16. Channels-last
// max pooling whose channel count is a multiple of 16 bytes' worth (ResNet's
// stem) takes 16 bytes of channels per thread, with the same bits. An empty
// output geometry writes nothing (its backward zeroes dx).
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::cuda {

// Padded positions never win (they count as -inf), as in TF and PyTorch.
void MaxPoolForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& y);
// Routes dy to the first maximum of each window, recomputed from x (once per
// window, into scratch, then gathered per input).
void MaxPoolBackward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& dy,
                     const core::Tensor& dx);

// count_include_pad: PyTorch's default divides by the full window; TF "same"
// divides by the valid positions only.
void AvgPoolForward(const ConvGeometry& g, bool count_include_pad, const core::Tensor& x,
                    const core::Tensor& y);
void AvgPoolBackward(const ConvGeometry& g, bool count_include_pad, const core::Tensor& dy,
                     const core::Tensor& dx);

// [N, C, spatial...] (or [N, spatial..., C] channels-last) -> [N, C].
void GlobalAvgPoolForward(const core::Tensor& x, const core::Tensor& y);
void GlobalAvgPoolBackward(const core::Tensor& dy, const core::Tensor& dx);

}  // namespace mlperf::cuda
