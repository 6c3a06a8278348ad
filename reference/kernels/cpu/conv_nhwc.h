// Channels-last (NHWC / NDHWC) convolution bodies behind the layout dispatch in
// conv.h; raw pointers, shapes already checked there. Weights stay
// [K, C, kD, kH, kW] as in every layout. The workspace is sized for
// omp_get_max_threads() threads at the time ConvWorkspaceElements is called;
// a call uses at most as many threads as its workspace has room for. Outputs
// are rounded to `round_to` as conv.h says.
#pragma once

#include <cstdint>
#include <functional>

#include "reference/core/dtype.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::cpu::nhwc {

int64_t ConvWorkspaceElements(const ConvGeometry& g);
void ConvForward(const ConvGeometry& g, const float* x, const float* w, float* y, float* workspace,
                 int64_t workspace_elements, core::DType round_to);
// Output rows [r0, r1) of a forward (pixels (n, [z,] y, x) in order, k
// floats each), as one thread computed them.
using OutputRows = std::function<void(int64_t r0, int64_t r1, const float* rows)>;
// ConvForward that hands its output to `consume` rather than writing y: a
// chunk of rows at a time, rounded, on the OpenMP thread that computed it and
// while it is in that core's cache, so that an epilogue (an inference batch
// norm) can take it without a trip through memory.
void ConvForwardRows(const ConvGeometry& g, const float* x, const float* w,
                     const OutputRows& consume, float* workspace, int64_t workspace_elements,
                     core::DType round_to);
// The same with x in bf16 (its bits: bf16 activation storage);
// requires the GEMMs on AMX tiles (GemmsRoundToBf16), which read it as it is.
void ConvForwardRows(const ConvGeometry& g, const uint16_t* x, const float* w,
                     const OutputRows& consume, float* workspace, int64_t workspace_elements,
                     core::DType round_to);
void ConvBackwardData(const ConvGeometry& g, const float* dy, const float* w, float* dx,
                      float* workspace, int64_t workspace_elements, core::DType round_to);
void ConvBackwardWeight(const ConvGeometry& g, const float* x, const float* dy, float* dw,
                        float* workspace, int64_t workspace_elements);

// The same with the activations stored in bf16 (uint16_t bits: x, y, dy,
// dx; an image x may stay fp32), as ResNet stores them under bf16 on AMX
// (ops::ActivationStorageType): the values of fp32 storage rounded at its
// storage points, bit for bit. Require the GEMMs on AMX tiles
// (GemmsRoundToBf16). The mixed overloads (a bf16 x, an fp32 y) are the 3D
// U-Net's output convolution, whose logits stay fp32.
void ConvForward(const ConvGeometry& g, const float* x, const float* w, uint16_t* y,
                 float* workspace, int64_t workspace_elements);
void ConvForward(const ConvGeometry& g, const uint16_t* x, const float* w, uint16_t* y,
                 float* workspace, int64_t workspace_elements);
void ConvForward(const ConvGeometry& g, const uint16_t* x, const float* w, float* y,
                 float* workspace, int64_t workspace_elements, core::DType round_to);
void ConvBackwardData(const ConvGeometry& g, const uint16_t* dy, const float* w, uint16_t* dx,
                      float* workspace, int64_t workspace_elements);
void ConvBackwardData(const ConvGeometry& g, const float* dy, const float* w, uint16_t* dx,
                      float* workspace, int64_t workspace_elements);
void ConvBackwardWeight(const ConvGeometry& g, const uint16_t* x, const uint16_t* dy, float* dw,
                        float* workspace, int64_t workspace_elements);
void ConvBackwardWeight(const ConvGeometry& g, const float* x, const uint16_t* dy, float* dw,
                        float* workspace, int64_t workspace_elements);
void ConvBackwardWeight(const ConvGeometry& g, const uint16_t* x, const float* dy, float* dw,
                        float* workspace, int64_t workspace_elements);

}  // namespace mlperf::cpu::nhwc
