// CUDA twins of cpu/conv.h through cuDNN's convolution API, 2-D and 3-D.
//
// Layout comes from the tensors' tags, shapes in memory order: kNCHW/kNCDHW
// (or kRowMajor) activations are [N, C, (D,) H, W], kNHWC/kNDHWC ones are
// [N, (D,) H, W, C]. Weights are [K, C, (kD,) kH, kW] as on the CPU (whose
// weights keep that order in every layout) unless tagged kNHWC/kNDHWC, then
// [K, (kD,) kH, kW, C]. x, w and y share one dtype (fp32, bf16 or fp16);
// accumulation is always fp32 (cuDNN's PSEUDO_HALF/PSEUDO_BFLOAT16
// configurations). fp32 runs with FMA math, without TF32, so that it agrees
// tightly with the CPU twin.
//
// Algorithms: cuDNN's best-ranked deterministic one where there is one (so
// that recorded and queued steps, and seeded runs, reproduce each other).
// Set MLPERF_CUDNN_LOG to see each choice on stderr. Each call goes through
// cuDNN's graph API first (cuda/conv_graph; MLPERF_CUDNN_GRAPH=0 turns it
// off) and through the legacy one where that offers no engine.
//
// Staging: channels-last activations with a [K, C, ...] filter run with a
// channels-last copy of the filter, the order cuDNN's channels-last kernels
// take (for the mixed case cuDNN 9.19 on an H200 offered no algorithm at
// all, in fp32 or bf16). A call that cuDNN still has no acceptable kernel for
// runs on fp32 channels-first copies of its operands, with the same fp32
// accumulation and one rounding of the result, and is named on stderr once.
//
// Asymmetric (TF "same") padding is outside the legacy cuDNN API: such calls
// pad the input explicitly into context scratch and run an unpadded
// convolution (the data gradient is computed padded and cropped).
#pragma once

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::cuda {

// cuDNN's workspace comes from the context's scratch (it grows during the
// warm-up step and is then reused), so callers need none: always 0. The
// `workspace` arguments below exist for signature parity and are ignored.
int64_t ConvWorkspaceElements(const ConvGeometry& g, core::Layout layout = core::Layout::kNCHW);

// How algorithms are picked, per (geometry, dtype, layout, direction),
// once: cuDNN's heuristics (default), or timing them on first use (like
// torch.backends.cudnn.benchmark; MLPERF_CUDNN_FIND=1): every algorithm of
// the legacy API, the acceptable engines of the graph API (conv_graph.h).
// It allocates, so use it in warm-up only.
enum class ConvAlgoSearch { kHeuristic, kExhaustive };
void SetConvAlgoSearch(ConvAlgoSearch search);
ConvAlgoSearch GetConvAlgoSearch();

void ConvForward(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& w,
                 const core::Tensor& y, const core::Tensor& workspace);
// y = act(conv(x, w) * scale + bias (+ residual)) as one cuDNN kernel, the
// epilogue in fp32 on the unrounded products (scale and bias fp32 per output
// channel on the device; the residual of y's dtype and layout; act a ReLU or
// the identity), where the graph API fuses it (ConvEpilogues() on,
// conv_graph.h): then true. Otherwise false, with nothing queued.
bool ConvForwardScaleBiasAct(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& w,
                             const float* scale, const float* bias, const core::Tensor& residual,
                             bool relu, const core::Tensor& y);
void ConvBackwardData(const ConvGeometry& g, const core::Tensor& dy, const core::Tensor& w,
                      const core::Tensor& dx, const core::Tensor& workspace);
void ConvBackwardWeight(const ConvGeometry& g, const core::Tensor& x, const core::Tensor& dy,
                        const core::Tensor& dw, const core::Tensor& workspace);

// y[n, c, s] += bias[c] (bias fp32, y any float dtype, either layout); and
// db[c] = sum over n, s of dy (fp32 accumulation, deterministic).
void BiasAddChannels(const core::Tensor& bias, const core::Tensor& y);
void BiasBackwardChannels(const core::Tensor& dy, const core::Tensor& dbias);

}  // namespace mlperf::cuda
