#include "reference/layers/layer_norm.h"

#include "reference/kernels/dispatch.h"

namespace mlperf::layers {

void LayerNorm::Allocate(int64_t rows, int64_t features, float epsilon, const std::string& name,
                         const ModelArenas& arenas, ParameterRegistry* registry) {
  epsilon_ = epsilon;
  const Parameter gamma =
      AddParameter(arenas, registry, {features}, {.name = name + ".weight", .batch_norm = true});
  const Parameter beta =
      AddParameter(arenas, registry, {features}, {.name = name + ".bias", .batch_norm = true});
  gamma_ = gamma.value;
  dgamma_ = gamma.grad;
  beta_ = beta.value;
  dbeta_ = beta.grad;
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
