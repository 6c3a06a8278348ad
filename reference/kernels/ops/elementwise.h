// Pointwise activations, residual adds, dropout, casts and channel concat:
// each op declared once, the CPU kernels (cpu/elementwise.cc) and the CUDA
// twins (cuda/elementwise.cu) registered behind it (kernels/op.h). Tensors
// fp32 unless an op says otherwise; the CUDA twins also take bf16/fp16 for
// the activations, in any mix.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

inline Op<void(const core::Tensor& x, const core::Tensor& y)> ReluForward{"ReluForward"};
// Uses the forward output: dx = dy where y > 0 (so it may run in place on y).
inline Op<void(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx)> ReluBackward{
    "ReluBackward"};

// tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), the BERT
// reference's gelu (modeling.py), not the erf form.
inline Op<void(const core::Tensor& x, const core::Tensor& y)> GeluForward{"GeluForward"};
inline Op<void(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx)> GeluBackward{
    "GeluBackward"};
// tanh (BERT's pooler). The backward uses the forward output: dx = dy (1 - y^2).
inline Op<void(const core::Tensor& x, const core::Tensor& y)> TanhForward{"TanhForward"};
inline Op<void(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx)> TanhBackward{
    "TanhBackward"};

// y = a + b (residual connections). Its backward hands dy to both inputs.
inline Op<void(const core::Tensor& a, const core::Tensor& b, const core::Tensor& y)> Add{"Add"};
inline Op<void(const core::Tensor& x, float alpha)> Scale{"Scale"};
// x *= *alpha, alpha a scalar on x's device (the dynamic loss scale, which
// the host never reads).
inline Op<void(const core::Tensor& x, const float* alpha)> ScaleBy{"ScaleBy"};
inline Op<void(const core::Tensor& x, float value)> Fill{"Fill"};

// Inverted dropout: element i is kept when Philox uniform (seed, offset, i)
// is >= p, and scaled by 1/(1-p). The backward regenerates the same mask.
// offset_base: when not null, an int64 on x's device added to offset when
// the op runs (a step counter there, so that a recorded step draws new masks).
inline Op<void(float p, uint64_t seed, uint64_t offset, const core::Tensor& x,
               const core::Tensor& y, const int64_t* offset_base)>
    DropoutForward{"DropoutForward"};
inline Op<void(float p, uint64_t seed, uint64_t offset, const core::Tensor& dy,
               const core::Tensor& dx, const int64_t* offset_base)>
    DropoutBackward{"DropoutBackward"};
// Dropout of x [rows, cols] as a window of a larger [*, row_width] tensor
// whose element (first_row + r, first_col + c) it is: element (r, c) draws
// the mask of that element's index in the larger tensor (the same stream
// convention), so that a rank holding part of one process's tensor (a data
// shard's rows, a tensor-parallel slice's columns) drops what that process
// drops there. (0, cols, 0) is DropoutForward. Its own backward: the same
// op on the gradient.
inline Op<void(float p, uint64_t seed, uint64_t offset, const core::Tensor& x,
               const core::Tensor& y, int64_t first_row, int64_t row_width, int64_t first_col)>
    DropoutWindow{"DropoutWindow"};
// x += amount on each element of an int64 tensor (that step counter).
inline Op<void(const core::Tensor& x, int64_t amount)> AddInt64{"AddInt64"};

// Element type conversion between fp32, bf16 and fp16 (round to nearest even).
inline Op<void(const core::Tensor& src, const core::Tensor& dst)> Cast{"Cast"};

// Along the channels, dimension 1 of [N, C, ...] or the last of a
// channels-last tensor: y = [a, b] (3D U-Net skip connections). The backward
// of a concat is a split.
inline Op<void(const core::Tensor& a, const core::Tensor& b, const core::Tensor& y)> ConcatChannels{
    "ConcatChannels"};
inline Op<void(const core::Tensor& y, const core::Tensor& a, const core::Tensor& b)> SplitChannels{
    "SplitChannels"};
// out = x[:, begin:begin+out.dim(1)] and its adjoint (writes zeros elsewhere).
inline Op<void(const core::Tensor& x, int64_t begin, const core::Tensor& out)> SliceChannels{
    "SliceChannels"};
inline Op<void(const core::Tensor& dout, int64_t begin, const core::Tensor& dx)>
    SliceChannelsBackward{"SliceChannelsBackward"};

}  // namespace mlperf::ops
