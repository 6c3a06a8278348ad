// LAMB after global-norm clipping (the BERT reference's lamb_optimizer_v1.py;
// kernels/optimizer_params.h has the update). The trust ratio and weight
// decay spare the slices marked no_trust_ratio / no_weight_decay (LayerNorm
// and biases).
#pragma once

#include <cstdint>
#include <vector>

#include "reference/kernels/optimizer_params.h"
#include "reference/optim/optimizer.h"

namespace mlperf::optim {

struct LambOptions {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float epsilon = 1e-6f;
  float weight_decay = 0.01f;
  float max_grad_norm = 1.0f;  // clip_by_global_norm before the update (0: none)
};

class Lamb final : public Optimizer {
 public:
  Lamb(const LambOptions& options, std::vector<TensorSlice> slices);
  void Allocate(core::Arena& arena, int64_t count) override;
  std::vector<StateTensor> State() const override;
  void Step(const StepArgs& args) override;
  bool ReadsGlobalGradientNorm() const override { return options_.max_grad_norm > 0.0f; }

 private:
  LambOptions options_;
  std::vector<TensorSlice> slices_;
  core::Tensor m_, v_, step_;  // step_: the bias correction's t (int32)
};

}  // namespace mlperf::optim
