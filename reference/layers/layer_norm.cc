#include "reference/layers/layer_norm.h"

#include "reference/kernels/dispatch.h"

namespace mlperf::layers {

void LayerNorm::Allocate(int64_t rows, int64_t features, float epsilon, const std::string& name,
                         const ModelArenas& arenas, ParameterRegistry* registry) {
  epsilon_ = epsilon;
  gamma_ = arenas.params->AllocateZeroed({features});
  dgamma_ = arenas.grads->AllocateZeroed({features});
  registry->parameters.push_back(
      {.name = name + ".weight", .value = gamma_, .grad = dgamma_, .batch_norm = true});
  beta_ = arenas.params->AllocateZeroed({features});
  dbeta_ = arenas.grads->AllocateZeroed({features});
  registry->parameters.push_back(
      {.name = name + ".bias", .value = beta_, .grad = dbeta_, .batch_norm = true});
  y_ = arenas.activations->Allocate({rows, features});
  mean_ = arenas.activations->Allocate({rows});
  inv_std_ = arenas.activations->Allocate({rows});
}

void LayerNorm::Forward(const core::Tensor& x) {
  ops::LayerNormForward(epsilon_, x, gamma_, beta_, y_, mean_, inv_std_);
}

void LayerNorm::Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx) {
  ops::LayerNormBackward(x, dy, gamma_, mean_, inv_std_, dx, dgamma_, dbeta_);
}

}  // namespace mlperf::layers
