// One convolution through cuDNN's graph (backend) API: the interface through
// which cuDNN offers all its engines, where the legacy cudnnConvolution*
// calls (cuda/conv) reach only part of them. The first GPU check measured
// the legacy path at 0.26-0.91x of PyTorch's convolutions, which go through
// the graph API; the third measured this path at 135-670 TFLOP/s in bf16
// on an H200 (PyTorch's: 160-650 in the first). cuda/conv tries it first (unless
// MLPERF_CUDNN_GRAPH=0 or SetConvGraphApi(false)) and falls back to the
// legacy path whenever it returns false.
#pragma once

#include <cudnn.h>

#include <cstdint>

#include "reference/kernels/conv_geometry.h"

namespace mlperf::cuda {

// A convolution as the graph API describes it: x, w and y with their
// dimensions ([N, C, (D,) H, W] and [K, C, (kD,) kH, kW]) and strides in
// elements, any padding before and after each spatial axis.
struct ConvGraphCall {
  enum Direction { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 } direction;
  cudnnDataType_t dtype;  // of x, w and y; the accumulation is always fp32
  int nb_dims;            // 4 or 5
  int64_t x_dims[5], x_strides[5];
  int64_t w_dims[5], w_strides[5];
  int64_t y_dims[5], y_strides[5];
  int64_t pre_pad[3], post_pad[3], stride[3];
  // Forward only: y = act(conv * scale + bias (+ residual)) in place of the
  // convolution's output, in its epilogue (an inference batch norm folded
  // in): scale and bias fp32 per output channel, the residual of y's dtype,
  // dimensions and strides, act a ReLU or the identity. The products are
  // not rounded before the epilogue, only y as it is written.
  bool scale_bias;
  bool residual;
  bool relu;
};

// The device pointers of a call's operands beyond x, w and y.
struct ConvGraphExtras {
  const float* scale = nullptr;
  const float* bias = nullptr;
  const void* residual = nullptr;
};

// Dimensions N, C, (D,) H, W (2-D: `spatial` holds D, H, W and D is left
// out) with the strides of the memory order, channels-last or not; the
// number of dimensions. cuda/conv's legacy descriptors use it too.
int ActivationDims(bool three_d, bool channels_last, int64_t n, int64_t c, const int64_t spatial[3],
                   int64_t dims[5], int64_t strides[5]);

// The call for geometry `g` (its padding as given, uneven too) on
// operands of one dtype, x and y in one order and w in its own.
ConvGraphCall DescribeConvGraph(ConvGraphCall::Direction direction, const ConvGeometry& g,
                                cudnnDataType_t dtype, bool three_d, bool x_channels_last,
                                bool w_channels_last);

// Queues the call on the context's stream (workspace from its scratch): the
// forward reads x and w and writes y; the data gradient reads y (dy) and w
// and writes x (dx); the filter gradient reads x and y (dy) and writes w
// (dw). False, with nothing queued, when cuDNN has no acceptable engine
// (fp32: none using tensor cores or down-converting, so no TF32;
// deterministic engines first). The plan is built once per call shape,
// dtype and alignment and kept: the heuristics' first acceptable engine, or
// under ConvAlgoSearch::kExhaustive (MLPERF_CUDNN_FIND=1) the fastest of
// their first eight, timed on the call's own tensors on first use.
// With call.scale_bias it reads extras.scale, extras.bias (and
// extras.residual). Fused calls take engines from the heuristics' mode A or
// else their fallback list (cuDNN compiles such engines at run time); one
// whose plan fails to run returns false, and that call shape is not tried
// again.
bool RunConvGraph(const ConvGraphCall& call, void* x, void* w, void* y,
                  const ConvGraphExtras& extras = {});

// Whether cuda/conv tries RunConvGraph first (default: yes, unless
// MLPERF_CUDNN_GRAPH=0).
void SetConvGraphApi(bool on);
bool ConvGraphApi();

// Whether cuda/conv's ConvForwardScaleBiasAct fuses an inference batch norm
// (with its residual add and ReLU) into the convolution's epilogue (default:
// yes, unless MLPERF_CUDNN_EPILOGUE=0; the sixth GPU check measured it
// faster), and how many calls this thread has run so.
void SetConvEpilogues(bool on);
bool ConvEpilogues();
int64_t ConvEpilogueRuns();

// Whether cuDNN accepts the call's operations (its tensors, the convolution
// and the direction's operation descriptor, with scale_bias the epilogue's
// pointwise operations), 16-byte aligned: the part of RunConvGraph that
// needs no device (tests).
bool ConvGraphDescribable(const ConvGraphCall& call);

// How many convolutions this thread has run through the graph API (tests
// and benchmarks check that it was used, not the fallback).
int64_t ConvGraphRuns();

}  // namespace mlperf::cuda
