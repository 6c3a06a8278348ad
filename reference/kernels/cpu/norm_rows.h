// The row passes and scratch buffers that the batch norm (norm.cc) and the
// instance norm (instance_norm.cc) share: statistics over rows of channels,
// the normalisation's affine apply and its backward's sums and apply, each
// with per-thread shares of the rows added in a fixed order. Internal to
// the CPU kernels.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/core/dtype.h"
#include "reference/core/tensor.h"
#include "reference/kernels/norm_params.h"

namespace mlperf::cpu::norm_detail {

// x viewed as [outer, channels, inner]; statistics per channel over outer*inner.
struct Dims {
  int64_t outer, channels, inner;
};

inline Dims ChannelDims(const core::Tensor& x) {
  const int64_t n = x.dim(0), c = x.dim(1);
  return {n, c, x.numel() / (n * c)};
}

// Mean and (biased) variance of channel c over d.outer * d.inner values.
void ChannelMoments(const float* x, Dims d, int64_t c, double* mean, double* var);

// Grows on first use and is reused afterwards, so that steady-state training
// steps allocate nothing. One buffer per calling thread, type and slot (the
// slot keeps buffers that are live at the same time apart).
template <typename T, int kSlot>
inline T* Scratch(size_t n) {
  static thread_local std::vector<T> buffer;
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

// Threads for a pass over `elements` values: all, or one when too small.
int BnThreads(int64_t elements);

// The per-channel scalars of a normalisation, in fp32 for the elementwise
// passes: y = (x - mean) * scale + beta.
struct Affine {
  float *mean, *scale, *beta;
};

// Scratch for `channels` channels' Affine (slot 0 of the float scratch).
Affine AffineScratch(int64_t channels);
// The Affine of an inference batch norm (running statistics), in that
// scratch.
Affine InferenceAffine(const BatchNormParams& p, const core::Tensor& gamma,
                       const core::Tensor& beta, const core::Tensor& running_mean,
                       const core::Tensor& running_var);

// y = act(affine(x) + residual) over `count` channel vectors of width c,
// rounded to `round_to`; PickApply picks the ReLU and residual variant.
using ApplyFn = void (*)(int64_t, int64_t, const float*, const float*, const float*, const float*,
                         const float*, float*, core::DType);
ApplyFn PickApply(bool relu, bool residual);
// The same into bf16 storage (y's bits), the residual stored so too: the
// values of ApplyFn rounding to bf16 (the normalised value before the add
// as well), half the bytes through memory.
using ApplyBf16Fn = void (*)(int64_t, int64_t, const float*, const uint16_t*, const float*,
                             const float*, const float*, uint16_t*);
ApplyBf16Fn PickApplyBf16(bool relu, bool residual);

// Applies `a` to `rows` channel vectors of width c, the rows shared by threads.
void ApplyRows(ApplyFn apply, int64_t rows, int64_t c, const float* x, const float* residual,
               const Affine& a, float* y, core::DType round_to, int threads);

// The row passes below also take channels-last activations stored in bf16
// (their bits, uint16_t; ResNet's storage under bf16 on AMX), with the
// fp32 passes' arithmetic and bf16's rounding points: the values of fp32
// storage rounded to bf16, bit for bit. Here the apply of PickApply(relu,
// residual != nullptr).
void ApplyRows(bool relu, int64_t rows, int64_t c, const uint16_t* x, const uint16_t* residual,
               const Affine& a, uint16_t* y, int threads);

// Mean and (biased) variance per channel of `rows` channel vectors of width c.
void RowMoments(const float* xp, int64_t rows, int64_t c, int threads, double* mean, double* var);
void RowMoments(const uint16_t* xp, int64_t rows, int64_t c, int threads, double* mean,
                double* var);

// Sums per channel of dy and dy * (x - mean) into s1, s2 (fp64) over
// `count` channel vectors of width c, or one channel's contiguous run (c ==
// 1), in the calling thread; with an addend and ReLU as RowBackwardSums.
using SumsFn = void (*)(int64_t count, int64_t c, const float* x, const float* y, float* dy,
                        const float* addend, core::DType round_to, const float* mean, double* s1,
                        double* s2);
SumsFn PickBackwardSums(bool relu);
// dx = a * dy - b * (x - mean) - d per channel over `count` channel vectors
// (or one channel's run, c == 1), rounded to `round_to`, in the calling thread.
void BackwardApply(int64_t count, int64_t c, const float* x, const float* dy, const float* mean,
                   const float* a, const float* b, const float* d, float* dx, core::DType round_to);

// Per-channel sums of dy and dy * (x - mean) over `rows` channel vectors of
// width c (dy first made dy + addend, rounded to `round_to`, with an addend,
// and masked by y > 0 with `relu`).
void RowBackwardSums(bool relu, int64_t rows, int64_t c, const float* x, const float* y, float* dy,
                     const float* addend, core::DType round_to, const float* mean, int threads,
                     double* sum_dy, double* sum_dy_xc);
// bf16 storage: dy + addend rounded to bf16.
void RowBackwardSums(bool relu, int64_t rows, int64_t c, const uint16_t* x, const uint16_t* y,
                     uint16_t* dy, const uint16_t* addend, const float* mean, int threads,
                     double* sum_dy, double* sum_dy_xc);

// dx = a * dy - b * (x - mean) - d per channel over `rows` channel vectors,
// rounded to `round_to`, the rows shared by threads.
void RowBackwardApply(int64_t rows, int64_t c, const float* x, const float* dy, const float* mean,
                      const float* a, const float* b, const float* d, float* dx, int threads,
                      core::DType round_to = core::DType::kF32);
void RowBackwardApply(int64_t rows, int64_t c, const uint16_t* x, const uint16_t* dy,
                      const float* mean, const float* a, const float* b, const float* d,
                      uint16_t* dx, int threads);

}  // namespace mlperf::cpu::norm_detail
