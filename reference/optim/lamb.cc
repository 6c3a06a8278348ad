#include "reference/optim/lamb.h"

#include <utility>

#include "reference/kernels/dispatch.h"

namespace mlperf::optim {

Lamb::Lamb(const LambOptions& options, std::vector<TensorSlice> slices)
    : options_(options), slices_(std::move(slices)) {}

void Lamb::Allocate(core::Arena& arena, int64_t count) {
  m_ = arena.AllocateZeroed({count});
  v_ = arena.AllocateZeroed({count});
  step_ = arena.AllocateZeroed({1}, core::DType::kI32);
}

std::vector<StateTensor> Lamb::State() const {
  return {{"momentum", m_, true}, {"second_moment", v_, true}, {"lamb_step", step_, false}};
}

void Lamb::Step(const StepArgs& a) {
  ops::LambStep(a.device,
                {.lr = a.lr,
                 .lr_at = a.lr_at,
                 .beta1 = options_.beta1,
                 .beta2 = options_.beta2,
                 .epsilon = options_.epsilon,
                 .weight_decay = options_.weight_decay,
                 .max_grad_norm = options_.max_grad_norm},
                slices_, a.w, a.g, m_.f32(), v_.f32(), step_.as<int32_t>(), a.found_inf);
}

}  // namespace mlperf::optim
