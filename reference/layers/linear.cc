#include "reference/layers/linear.h"

#include "reference/kernels/dispatch.h"

namespace mlperf::layers {

void Linear::Allocate(int64_t rows, int64_t in_features, int64_t out_features,
                      Activation activation, const std::string& name, const ModelArenas& arenas,
                      ParameterRegistry* registry) {
  activation_ = activation;
  w_ = arenas.params->AllocateZeroed({out_features, in_features});
  dw_ = arenas.grads->AllocateZeroed({out_features, in_features});
  registry->parameters.push_back({.name = name + ".weight", .value = w_, .grad = dw_});
  b_ = arenas.params->AllocateZeroed({out_features});
  db_ = arenas.grads->AllocateZeroed({out_features});
  registry->parameters.push_back({.name = name + ".bias", .value = b_, .grad = db_, .bias = true});
  y_ = arenas.activations->Allocate({rows, out_features});
  z_ = activation == Activation::kGelu ? arenas.activations->Allocate({rows, out_features}) : y_;
}

void Linear::Forward(const core::Tensor& x) {
  ops::LinearForward(x, w_, b_, z_);
  if (activation_ == Activation::kRelu) ops::ReluForward(y_, y_);
  if (activation_ == Activation::kGelu) ops::GeluForward(z_, y_);
}

void Linear::Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx) {
  if (activation_ == Activation::kRelu) ops::ReluBackward(y_, dy, dy);
  if (activation_ == Activation::kGelu) ops::GeluBackward(z_, dy, dy);
  ops::LinearBackward(x, w_, dy, dx, dw_, db_);
}

}  // namespace mlperf::layers
