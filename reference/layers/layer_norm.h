// Layer norm over the last dimension with a learned scale and shift (BERT:
// epsilon 1e-12), on either backend. Its scale and shift are registered as
// normalisation parameters, so LAMB and LARS skip them.
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

class LayerNorm {
 public:
  // rows x features inputs. Registers name.weight (1) and name.bias (0 at init).
  void Allocate(int64_t rows, int64_t features, float epsilon, const std::string& name,
                const ModelArenas& arenas, ParameterRegistry* registry);
  void Forward(const core::Tensor& x);
  // dx must not alias dy (the scale and shift gradients read dy last).
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx);

  const core::Tensor& output() const { return y_; }

 private:
  float epsilon_ = 1e-12f;
  core::Tensor gamma_, beta_, dgamma_, dbeta_, y_, mean_, inv_std_;
};

}  // namespace mlperf::layers
