// Adam and AdamW, bias-corrected, in the fused form of apex and
// TransformerEngine (kernels/optimizer_params.h has the update): AdamW decays
// the weights apart from the moments, Adam adds the decay to the gradient.
// Weight decay spares the slices marked no_weight_decay.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/kernels/optimizer_params.h"
#include "reference/optim/optimizer.h"

namespace mlperf::optim {

struct AdamOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-8f;
  float weight_decay = 0.0f;
  bool decoupled = true;  // AdamW; false: Adam with an L2 term
  // > 0: the gradients' global norm clipped to it first (the LLMs' 1.0).
  float max_grad_norm = 0.0f;
};

class Adam final : public Optimizer {
 public:
  Adam(const AdamOptions& options, std::vector<TensorSlice> slices);
  void Allocate(core::Arena& arena, int64_t count) override;
  std::vector<StateTensor> State() const override;
  void Step(const StepArgs& args) override;
  bool ReadsGlobalGradientNorm() const override { return options_.max_grad_norm > 0.0f; }

 private:
  AdamOptions options_;
  std::vector<TensorSlice> slices_;
  core::Tensor m_, v_, step_;  // step_: the bias correction's t (int32)
};

}  // namespace mlperf::optim
