#include "reference/optim/adagrad.h"

#include <utility>

#include "reference/kernels/dispatch.h"

namespace mlperf::optim {

Adagrad::Adagrad(const AdagradOptions& options, std::vector<TensorSlice> slices)
    : options_(options), slices_(std::move(slices)) {}

void Adagrad::Allocate(core::Arena& arena, int64_t count) { sum_ = arena.AllocateZeroed({count}); }

// "sum" as torch.optim.Adagrad names its state.
std::vector<StateTensor> Adagrad::State() const { return {{"sum", sum_, true}}; }

void Adagrad::Step(const StepArgs& a) {
  ops::AdagradStep(a.device,
                   {.lr = a.lr,
                    .lr_at = a.lr_at,
                    .epsilon = options_.epsilon,
                    .weight_decay = options_.weight_decay},
                   slices_, a.w, a.g, sum_.f32(), a.found_inf);
}

}  // namespace mlperf::optim
