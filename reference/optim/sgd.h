// Stochastic gradient descent with momentum, in the two forms the references
// use.
#pragma once

#include <cstdint>
#include <vector>

#include "reference/kernels/optimizer_params.h"
#include "reference/optim/optimizer.h"

namespace mlperf::optim {

// torch.optim.SGD: d = g + wd*w; buf = momentum*buf + d; w -= lr*(nesterov ?
// d + momentum*buf : buf). Weight decay spares the slices marked
// no_weight_decay; torch's one parameter group decays every tensor, so a
// benchmark that follows it builds the slices with none marked (the 3D
// U-Net's Nesterov SGD).
struct SgdOptions {
  float momentum = 0.9f;
  float weight_decay = 0.0f;
  bool nesterov = false;
};
class Sgd final : public Optimizer {
 public:
  Sgd(const SgdOptions& options, std::vector<TensorSlice> slices);
  void Allocate(core::Arena& arena, int64_t count) override;
  std::vector<StateTensor> State() const override;
  void Step(const StepArgs& args) override;

 private:
  SgdOptions options_;
  std::vector<TensorSlice> slices_;
  core::Tensor momentum_;
};

// tf.keras SGD with momentum and an L2 term in the loss (the ResNet
// reference's SGD): loss += wd * sum(w^2) over `l2_slices` (its variables
// outside batch norms, the classifier's bias included), so g += 2*wd*w there;
// then v = momentum*v - lr*g; w += v over every parameter. The parameters
// are equal on every rank, so adding the term after the all-reduce is the
// same as each replica adding it before.
struct KerasSgdOptions {
  float momentum = 0.9f;
  float weight_decay = 0.0f;
};
class KerasSgd final : public Optimizer {
 public:
  KerasSgd(const KerasSgdOptions& options, std::vector<TensorSlice> slices,
           std::vector<TensorSlice> l2_slices);
  void Allocate(core::Arena& arena, int64_t count) override;
  std::vector<StateTensor> State() const override;
  void Step(const StepArgs& args) override;
  double LossTerm(core::Device device) const override;

 private:
  // On the host: g += 2 wd w over the L2 slices; returns wd * sum(w^2).
  double AddL2Gradient(float* w, float* g) const;
  // On a device, the same, leaving each slice's sum(w^2) in l2_sums_.
  void QueueL2Gradient(core::Device device, float* w, float* g) const;

  KerasSgdOptions options_;
  std::vector<TensorSlice> plain_;  // every slice, trust ratio and decay off
  std::vector<TensorSlice> l2_slices_;
  core::Tensor momentum_, l2_scratch_, l2_sums_;
  double host_l2_loss_ = 0.0;
};

}  // namespace mlperf::optim
