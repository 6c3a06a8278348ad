// FP8 linear layers, as Transformer Engine runs them under its default
// recipe (E4M3 forward, E5M2 backward, delayed scaling): the input x and the
// weight w are cast to E4M3 and the output gradient dy to E5M2, each times
// its own per-tensor scale (saturating, nearest even), and the three GEMMs
//   y = x w^T + bias,  dx = dy w,  dw = dy^T x
// multiply the FP8 codes exactly, accumulate in fp32 and undo the two
// scales (times each one's inverse). Their outputs (y, dx, dw, dbias) are
// rounded to bf16, the compute precision under --precision fp8, unless
// stored in it; dbias sums dy unquantised.
//
// Each layer keeps its scaling state in one fp32 tensor on its device, so a
// step needs no host round trip (layout below). Casts use the scales as
// they stand and raise the step's amax of their tensor; at the end of a
// step Fp8UpdateScaling moves each amax (the largest over the data-parallel
// ranks) into its history and sets scale = format max / the history's
// largest (margin 0, core::DelayedScaling's rule, which the tests hold it to).
// A zero or non-finite history keeps the scale. The state is a model buffer:
// warm-up restores it and checkpoints hold it.
#pragma once

#include <cstdint>

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"

namespace mlperf::ops {

// The three tensors of a layer, rows of its state.
enum Fp8Role : int { kFp8Input = 0, kFp8Weight = 1, kFp8GradOutput = 2 };
inline constexpr int kFp8Roles = 3;
// Transformer Engine's default amax history.
inline constexpr int kFp8History = 1024;
// The state, fp32:
//   [0, 3)  each role's scale (x * scale is cast)
//   [3, 6)  their inverses (the GEMMs' descales)
//   [6, 9)  each role's amax so far this step
//   [9, 9 + 3 * kFp8History)  their histories, newest first
inline constexpr int64_t kFp8ScaleAt = 0, kFp8ScaleInverseAt = 3, kFp8AmaxAt = 6, kFp8HistoryAt = 9;
inline constexpr int64_t kFp8StateFloats = kFp8HistoryAt + kFp8Roles * kFp8History;

// Scales 1, amaxes and histories 0 (a new layer).
void ResetFp8Scaling(const core::Tensor& state);

// q = x * scale[role] cast to the role's format, as codes (kU8; the CUDA
// kernels' operands) or as their fp32 values (kF32; the CPU's), of x's
// shape taken as [rows, last dimension], or transposed ([last, rows]).
// Raises amax[role] to max |x|. x: fp32 or bf16.
inline Op<void(const core::Tensor& x, const core::Tensor& state, int role, bool transpose,
               const core::Tensor& q)>
    Fp8Quantize{"Fp8Quantize"};

// x: [rows, in], w: [out, in] (fp32 or bf16), bias: [out] or empty, y:
// [rows, out] (fp32, or bf16 on a device).
inline Op<void(const core::Tensor& x, const core::Tensor& w, const core::Tensor& bias,
               const core::Tensor& y, const core::Tensor& state)>
    Fp8LinearForward{"Fp8LinearForward"};
// The forward's x and w (cast again with the same scales), dy: [rows, out];
// dx, dw (fp32) and dbias overwritten, each skipped when empty.
inline Op<void(const core::Tensor& x, const core::Tensor& w, const core::Tensor& dy,
               const core::Tensor& dx, const core::Tensor& dw, const core::Tensor& dbias,
               const core::Tensor& state)>
    Fp8LinearBackward{"Fp8LinearBackward"};

// Ends a step for one layer: amax[role] := the largest of amax[r * stride +
// role] over r < ranks (on the state's device; the state's own amaxes with
// stride 0 and one rank), pushed into the history; new scales and inverses;
// the step's amaxes cleared.
inline Op<void(const core::Tensor& state, const float* amax, int64_t stride, int64_t ranks)>
    Fp8UpdateScaling{"Fp8UpdateScaling"};

}  // namespace mlperf::ops
