// Pointwise activations, residual adds, dropout, casts and channel concat.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"

namespace mlperf::cpu {

void ReluForward(const core::Tensor& x, const core::Tensor& y);
// Uses the forward output: dx = dy where y > 0 (so it may run in place on y).
void ReluBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx);

// tanh approximation 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))), the BERT
// reference's gelu (modeling.py), not the erf form.
void GeluForward(const core::Tensor& x, const core::Tensor& y);
void GeluBackward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx);
// tanh (BERT's pooler). The backward uses the forward output: dx = dy (1 - y^2).
void TanhForward(const core::Tensor& x, const core::Tensor& y);
void TanhBackward(const core::Tensor& y, const core::Tensor& dy, const core::Tensor& dx);

// y = a + b (residual connections). Its backward hands dy to both inputs.
void Add(const core::Tensor& a, const core::Tensor& b, const core::Tensor& y);
// y += x (gradient accumulation where a tensor feeds two consumers); the
// sum rounded to `round_to` (bf16 or fp16) as it is written, if given.
void Accumulate(const core::Tensor& x, const core::Tensor& y,
                core::DType round_to = core::DType::kF32);
void Scale(const core::Tensor& x, float alpha);
// x *= *alpha, alpha a scalar on x's device (the dynamic loss scale, which
// the host never reads).
void ScaleBy(const core::Tensor& x, const float* alpha);
void Fill(const core::Tensor& x, float value);

// Inverted dropout: element i is kept when Philox uniform (seed, offset, i)
// is >= p, and scaled by 1/(1-p). The backward regenerates the same mask.
// offset_base: when set, an int64 on x's device added to offset when the op
// runs (a step counter there, so that a recorded step draws new masks).
void DropoutForward(float p, uint64_t seed, uint64_t offset, const core::Tensor& x,
                    const core::Tensor& y, const int64_t* offset_base = nullptr);
void DropoutBackward(float p, uint64_t seed, uint64_t offset, const core::Tensor& dy,
                     const core::Tensor& dx, const int64_t* offset_base = nullptr);
// x += amount on each element of an int64 tensor (that step counter).
void AddInt64(const core::Tensor& x, int64_t amount);

// Element type conversion between fp32, bf16 and fp16 (round to nearest even).
void Cast(const core::Tensor& src, const core::Tensor& dst);
// dst = src rounded to bf16 or fp16 precision, kept in fp32 (the rounding
// points of ops/precision.h); in place when src and dst are the same.
void RoundToPrecision(core::DType precision, const core::Tensor& src, const core::Tensor& dst);

// Along the channels, dimension 1 of [N, C, ...] or the last of a
// channels-last tensor: y = [a, b] (3D U-Net skip connections). The backward
// of a concat is a split.
void ConcatChannels(const core::Tensor& a, const core::Tensor& b, const core::Tensor& y);
void SplitChannels(const core::Tensor& y, const core::Tensor& a, const core::Tensor& b);
// out = x[:, begin:begin+out.dim(1)] and its adjoint (writes zeros elsewhere).
void SliceChannels(const core::Tensor& x, int64_t begin, const core::Tensor& out);
void SliceChannelsBackward(const core::Tensor& dout, int64_t begin, const core::Tensor& dx);

}  // namespace mlperf::cpu
