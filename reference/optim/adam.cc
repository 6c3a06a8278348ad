#include "reference/optim/adam.h"

#include <utility>

#include "reference/kernels/dispatch.h"

namespace mlperf::optim {

Adam::Adam(const AdamOptions& options, std::vector<TensorSlice> slices)
    : options_(options), slices_(std::move(slices)) {}

void Adam::Allocate(core::Arena& arena, int64_t count) {
  m_ = arena.AllocateZeroed({count});
  v_ = arena.AllocateZeroed({count});
  step_ = arena.AllocateZeroed({1}, core::DType::kI32);
}

std::vector<StateTensor> Adam::State() const {
  return {{"exp_avg", m_, true}, {"exp_avg_sq", v_, true}, {"adam_step", step_, false}};
}

void Adam::Step(const StepArgs& a) {
  ops::AdamStep(a.device,
                {.lr = a.lr,
                 .lr_at = a.lr_at,
                 .beta1 = options_.beta1,
                 .beta2 = options_.beta2,
                 .epsilon = options_.epsilon,
                 .weight_decay = options_.weight_decay,
                 .decoupled = options_.decoupled,
                 .max_grad_norm = options_.max_grad_norm},
                slices_, a.w, a.g, m_.f32(), v_.f32(), step_.as<int32_t>(), a.found_inf);
}

}  // namespace mlperf::optim
