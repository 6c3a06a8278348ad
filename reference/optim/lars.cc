#include "reference/optim/lars.h"

#include <utility>

#include "reference/kernels/dispatch.h"

namespace mlperf::optim {

Lars::Lars(const LarsOptions& options, std::vector<TensorSlice> slices)
    : options_(options), slices_(std::move(slices)) {}

void Lars::Allocate(core::Arena& arena, int64_t count) {
  momentum_ = arena.AllocateZeroed({count});
}

std::vector<StateTensor> Lars::State() const { return {{"momentum", momentum_, true}}; }

void Lars::Step(const StepArgs& a) {
  ops::LarsStep(a.device,
                {.lr = a.lr,
                 .lr_at = a.lr_at,
                 .momentum = options_.momentum,
                 .weight_decay = options_.weight_decay,
                 .eeta = options_.eeta},
                slices_, a.w, a.g, momentum_.f32(), a.found_inf);
}

}  // namespace mlperf::optim
