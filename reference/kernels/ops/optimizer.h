// Fused optimizer steps over flat parameter/gradient/state arenas, and the
// device half of dynamic loss scaling, declared once (kernels/op.h); kernels
// in cpu/optimizer.cc and cuda/optimizer.cu. Raw pointers carry no device,
// so it comes first. `found_inf` (may be null) is the 1-element flag
// UnscaleAndCheckFinite writes: when nonzero the step is skipped entirely,
// without the host reading it.
#pragma once

#include <cstdint>
#include <span>

#include "reference/core/tensor.h"
#include "reference/kernels/op.h"
#include "reference/kernels/optimizer_params.h"

namespace mlperf::ops {

inline Op<void(core::Device device, const SgdParams& p, std::span<const TensorSlice> slices,
               float* w, const float* g, float* momentum, const float* found_inf)>
    SgdStep{"SgdStep"};
inline Op<void(core::Device device, const LarsParams& p, std::span<const TensorSlice> slices,
               float* w, const float* g, float* momentum, const float* found_inf)>
    LarsStep{"LarsStep"};
// `step` is the 1-element step counter t of the bias correction; it is
// incremented here (not when the step is skipped), so it stays on the device.
inline Op<void(core::Device device, const LambParams& p, std::span<const TensorSlice> slices,
               float* w, const float* g, float* m, float* v, int32_t* step, const float* found_inf)>
    LambStep{"LambStep"};
// Adam or AdamW (AdamParams::decoupled); `step` as LambStep's.
inline Op<void(core::Device device, const AdamParams& p, std::span<const TensorSlice> slices,
               float* w, const float* g, float* m, float* v, int32_t* step, const float* found_inf)>
    AdamStep{"AdamStep"};
// Adagrad (AdagradParams); `sum` is the accumulator, per element.
inline Op<void(core::Device device, const AdagradParams& p, std::span<const TensorSlice> slices,
               float* w, const float* g, float* sum, const float* found_inf)>
    AdagradStep{"AdagradStep"};
// g *= 1/loss_scale; found_inf = 1 if any element of g is Inf or NaN, else 0.
inline Op<void(core::Device device, float* g, int64_t n, const float* loss_scale, float* found_inf)>
    UnscaleAndCheckFinite{"UnscaleAndCheckFinite"};
// After an overflow: scale *= backoff, tracker = 0. Otherwise tracker += 1,
// and after growth_interval clean steps scale *= growth, tracker = 0.
inline Op<void(core::Device device, const LossScaleParams& p, float* loss_scale,
               int32_t* growth_tracker, const float* found_inf)>
    UpdateLossScale{"UpdateLossScale"};

}  // namespace mlperf::ops
