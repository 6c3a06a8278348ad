// Adagrad as torch.optim.Adagrad computes it (lr_decay 0, initial
// accumulator 0, weight decay as an L2 term sparing no_weight_decay slices):
// DLRM-dcnv2's optimizer for its dense layers.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/kernels/optimizer_params.h"
#include "reference/optim/optimizer.h"

namespace mlperf::optim {

struct AdagradOptions {
  float epsilon = 1e-10f;  // torch's default; DLRM-dcnv2 uses 1e-8
  float weight_decay = 0.0f;
};

class Adagrad final : public Optimizer {
 public:
  Adagrad(const AdagradOptions& options, std::vector<TensorSlice> slices);
  void Allocate(core::Arena& arena, int64_t count) override;
  std::vector<StateTensor> State() const override;
  void Step(const StepArgs& args) override;

 private:
  AdagradOptions options_;
  std::vector<TensorSlice> slices_;
  core::Tensor sum_;
};

}  // namespace mlperf::optim
