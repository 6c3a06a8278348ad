// Zero-padded input channels for channels-last 16-bit convolutions whose
// input channel count is not a multiple of 8 (ResNet-50's stem: 3 colour
// channels): cuDNN's tensor-core kernels read 16 bytes of channels at a
// time, and the fifth GPU check timed the stem's bf16 forward at 1.8 ms and
// its filter gradient at 1.2 ms on an H200, slower than convolutions with
// twenty times its arithmetic. cuda/conv then runs the call on copies with
// the channels padded with zeros to the next multiple of 8 (x, or dx, and
// the filter, both channels-last), which leaves every product unchanged, and
// crops the gradients back. Internal to cuda/conv.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"

namespace mlperf::cuda {

// Whether cuda/conv pads such calls (default: no, unless
// MLPERF_CONV_PAD_CHANNELS=1; written without a GPU, opt-in until a GPU
// check has run and timed it).
void SetConvPadChannels(bool on);
bool ConvPadChannels();

// Whether the call with activation `x` (or dx) is padded: the switch on,
// channels-last bf16/fp16 activations, input channels not a multiple of 8.
bool PadsChannels(const ConvGeometry& g, const core::Tensor& x);

// g with its input channels rounded up to a multiple of 8.
ConvGeometry WithPaddedChannels(const ConvGeometry& g);

// A channels-last copy of `t` ([N, C, spatial] in either order: an
// activation, or a filter [K, C, kernel...]) with `channels` channels, the
// extra ones zero, in scratch `slot`.
core::Tensor PaddedChannels(const core::Tensor& t, int64_t channels, int slot);

// Scratch shaped as PaddedChannels(like, channels, slot), contents unset
// (for a gradient that CropChannels then copies out).
core::Tensor PaddedChannelsLike(const core::Tensor& like, int64_t channels, int slot);

// dst = the first dst-channels channels of `padded` (PaddedChannelsLike's
// order), written in dst's own order.
void CropChannels(const core::Tensor& padded, const core::Tensor& dst);

}  // namespace mlperf::cuda
