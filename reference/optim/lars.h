// LARS: layer-wise adaptive rate scaling with TF-style momentum (the ResNet
// reference's lars_optimizer.py; kernels/optimizer_params.h has the update).
// The trust ratio and weight decay spare the slices marked no_trust_ratio /
// no_weight_decay (the reference's skip list: batch norms and biases).
#pragma once

#include <cstdint>
#include <vector>

#include "reference/kernels/optimizer_params.h"
#include "reference/optim/optimizer.h"

namespace mlperf::optim {

struct LarsOptions {
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  float eeta = 0.001f;
};

class Lars final : public Optimizer {
 public:
  Lars(const LarsOptions& options, std::vector<TensorSlice> slices);
  void Allocate(core::Arena& arena, int64_t count) override;
  std::vector<StateTensor> State() const override;
  void Step(const StepArgs& args) override;

 private:
  LarsOptions options_;
  std::vector<TensorSlice> slices_;
  core::Tensor momentum_;
};

}  // namespace mlperf::optim
