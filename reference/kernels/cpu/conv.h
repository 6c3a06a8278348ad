// Convolutions by im2col + GEMM. Activations are NC[D]HW (layout tag kNCHW,
// kNCDHW or kRowMajor: im2col per image) or channels-last N[D]HWC (tag kNHWC
// or kNDHWC, shape in memory order {N, [D,] H, W, C}: the output pixels of
// the whole minibatch are the GEMM rows, see conv_nhwc.cc). x and y (dx and dy) must carry the
// same layout family, checked. Weights are [out_channels, in_channels, kD, kH,
// kW] (PyTorch order) in every layout, so checkpoints do not depend on it.
// Transposed convolution, the adjoint of a convolution, is composed of these
// once for both backends (kernels/composite.h).
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::cpu {

// Floats of scratch the calls below need for activations in `layout`;
// kRowMajor, kNCHW and kNCDHW all mean channels-first (one image's im2col
// matrix; zero for pointwise convolutions). Channels-last needs, per OpenMP
// thread (omp_get_max_threads() when this is called), a chunk of im2col rows
// (about 4 MiB) and a weight-gradient partial, plus the repacked weight: a
// few MB to tens of MB, never the whole batch's im2col matrix. A call with
// more threads than the workspace was sized for uses fewer threads.
int64_t ConvWorkspaceElements(const ConvGeometry& g, core::Layout layout = core::Layout::kNCHW);

// Each output is rounded to `round_to` (bf16 or fp16) if given: a block at a
// time as it is written where the output is written once (per image, per
// chunk of rows), else in one pass at the end.
// Channels-last activations (x, y, dy, dx; not the weight) may also be
// stored in bf16 under bf16 on AMX (nhwc's bf16 overloads), an image x
// staying fp32: then stored rounded, and round_to does not apply.
void ConvForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& w,
                 const core::Tensor& y, const core::Tensor& workspace,
                 core::DType round_to = core::DType::kF32);
void ConvBackwardData(const ConvGeometry& g, const core::Tensor& dy, const core::Tensor& w,
                      const core::Tensor& dx, const core::Tensor& workspace,
                      core::DType round_to = core::DType::kF32);
void ConvBackwardWeight(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& dy,
                        const core::Tensor& dw, const core::Tensor& workspace,
                        core::DType round_to = core::DType::kF32);

// y[n, c, s] += bias[c], rounded to round_to; and its gradient db[c] = sum
// over n, s of dy. The channel is dim 1, or the last dim for channels-last
// tensors.
void BiasAddChannels(const core::Tensor& bias, const core::Tensor& y,
                     core::DType round_to = core::DType::kF32);
void BiasBackwardChannels(const core::Tensor& dy, const core::Tensor& dbias);

}  // namespace mlperf::cpu
