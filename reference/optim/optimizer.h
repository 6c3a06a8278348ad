// The optimizer interface the trainer steps through. An optimizer keeps its
// state in the trainer's arena on the model's device (carved by Allocate,
// known to the warm-up's restore and to checkpoints through State) and
// updates the flat arena of trainable parameters in fused device steps.
// Which tensors it decays or scales by a trust ratio comes from the
// parameters' properties in the slices it was built with; a benchmark picks
// the optimizer and builds it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/tensor.h"

namespace mlperf::optim {

// One tensor of optimizer state on the model's device. Per-element state
// (momentum, moments) has the layout of the trainable arena; the rest is a
// few scalars (a step count).
struct StateTensor {
  std::string name;  // "momentum", "second_moment", "lamb_step", ...
  core::Tensor tensor;
  bool per_element = false;
};

// One step over the trainable arena after the gradients are averaged (and,
// under dynamic loss scaling, unscaled).
struct StepArgs {
  core::Device device = core::Device::kCpu;
  float* w = nullptr;  // `count` parameters
  float* g = nullptr;  // their gradients, which a step may change (SGD's L2 term)
  int64_t count = 0;
  // The step's rate; on a device read from lr_at when the step runs (so a
  // recorded step replays with each step's rate).
  float lr = 0.0f;
  const float* lr_at = nullptr;
  // Dynamic loss scaling's overflow flag on the device (or null): when set,
  // the step changes nothing.
  const float* found_inf = nullptr;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // Carves the state for `count` parameter elements, zeroed, and any scratch
  // a step needs, from `arena`: called on a measuring arena, then on the
  // real one, so nothing is allocated in a step.
  virtual void Allocate(core::Arena& arena, int64_t count) = 0;
  virtual std::vector<StateTensor> State() const = 0;
  virtual void Step(const StepArgs& args) = 0;
  // The term the last Step added to the objective (SGD's L2 loss), read back
  // from `device`; 0 for most.
  virtual double LossTerm(core::Device /*device*/) const { return 0.0; }
  // Whether a step reads every gradient at once (LAMB's global-norm
  // clipping): with parameters sharded across ranks that norm would be each
  // rank's own, so the trainer refuses the pair.
  virtual bool ReadsGlobalGradientNorm() const { return false; }
  // Whether the step itself reduces the ranks' gradients (the distributed
  // optimizer's reduce-scatter): the trainer then leaves them as each rank
  // computed them.
  virtual bool ReducesGradients() const { return false; }
};

}  // namespace mlperf::optim
