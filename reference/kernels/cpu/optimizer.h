// Fused optimizer steps over flat parameter/gradient/state arenas, and the
// device-side half of dynamic loss scaling. `found_inf` (may be null) is a
// 1-element flag written by UnscaleAndCheckFinite: when nonzero the step is
// skipped entirely, without the host reading it (the CUDA twin reads it on
// the device).
#pragma once

#include <cstdint>
#include <span>

#include "reference/kernels/optimizer_params.h"

namespace mlperf::cpu {

void SgdStep(const SgdParams& p, std::span<const TensorSlice> slices, float* w, const float* g,
             float* momentum, const float* found_inf);

void LarsStep(const LarsParams& p, std::span<const TensorSlice> slices, float* w, const float* g,
              float* momentum, const float* found_inf);

// `step` is the 1-element step counter t used in the bias correction; it is
// incremented here (not when the step is skipped), so it stays on the device.
void LambStep(const LambParams& p, std::span<const TensorSlice> slices, float* w, const float* g,
              float* m, float* v, int32_t* step, const float* found_inf);

// Adam or AdamW (AdamParams::decoupled); `step` as LambStep's.
void AdamStep(const AdamParams& p, std::span<const TensorSlice> slices, float* w, const float* g,
              float* m, float* v, int32_t* step, const float* found_inf);

// g *= 1/loss_scale; found_inf = 1 if any element of g is Inf or NaN, else 0.
void UnscaleAndCheckFinite(float* g, int64_t n, const float* loss_scale, float* found_inf);

// After an overflow: scale *= backoff, tracker = 0. Otherwise tracker += 1,
// and after growth_interval clean steps scale *= growth, tracker = 0.
void UpdateLossScale(const LossScaleParams& p, float* loss_scale, int32_t* growth_tracker,
                     const float* found_inf);

}  // namespace mlperf::cpu
