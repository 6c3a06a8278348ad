// Winograd's minimal filtering F(4x4, 3x3) for the CPU's channels-first fp32
// 3x3 convolutions of stride 1 and padding 1 (Lavin and Gray, "Fast
// Algorithms for Convolutional Neural Networks", 2016). Each 4 x 4 output tile
// comes from a 6 x 6 input patch with 36 products per channel pair instead of
// 144, so the GEMMs that carry the work (one per patch element, over the
// channels) do a quarter of im2col's multiplies. RetinaNet's heads and FPN
// are such convolutions, three quarters of its step.
//
// All three passes are exact in exact arithmetic: backward data runs the
// forward pipeline on the flipped, transposed filters, backward weight is
// the adjoint of the forward in the filter. In fp32 the transforms cost
// precision (a relative error of a few 1e-6 at 256 channels, against about
// 1e-7 for im2col's GEMM), as cuDNN's and oneDNN's Winograd paths do.
//
// Results do not depend on the thread count: every output is summed in the
// same order whichever thread computes it.
#pragma once

#include <cstdint>

#include "reference/kernels/conv_geometry.h"

namespace mlperf::cpu::winograd {

// Whether g is a convolution this path computes: one whose caller accepts
// it (ConvGeometry::winograd), 2D, 3x3, stride 1,
// padding 1 on both sides, one group, at least kMinChannels in and out
// (below that the transforms cost more than the GEMMs save), and GEMMs that
// keep fp32 operands (not bf16 operands on AMX: the transformed operands
// would lose too much in bf16). False while disabled (SetEnabled, or the
// kernel switch MLPERF_CPU_WINOGRAD=0).
bool Applies(const ConvGeometry& g);
inline constexpr int64_t kMinChannels = 16;
inline constexpr int64_t kMinPixels = 64;

// Switches the path on or off for the process (on by default), for the
// benchmarks that set it against im2col in one run. Not for concurrent use.
void SetEnabled(bool on);

// Workspace floats of any of the three passes of g (zero when the geometry
// never qualifies, whether or not the path is enabled).
int64_t WorkspaceElements(const ConvGeometry& g);

// y = conv(x, w); x [N, C, H, W], w [K, C, 3, 3], y [N, K, H, W].
void Forward(const ConvGeometry& g, const float* x, const float* w, float* y, float* workspace);
// dx = conv_transpose(dy, w).
void BackwardData(const ConvGeometry& g, const float* dy, const float* w, float* dx,
                  float* workspace);
// dw = sum over images of x (*) dy (overwritten).
void BackwardWeight(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                    float* workspace);

}  // namespace mlperf::cpu::winograd
