// RMSNorm over the last dimension with a learned scale (Llama), on either
// backend. Its scale is registered as a normalisation parameter (no weight
// decay).
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

class RmsNorm {
 public:
  // rows x features inputs. Registers name.weight (1 at init).
  void Allocate(int64_t rows, int64_t features, float epsilon, const std::string& name,
                const ModelArenas& arenas, ParameterRegistry* registry);
  void Forward(const core::Tensor& x);
  // dx must not alias dy.
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx);

  const core::Tensor& output() const { return y_; }

 private:
  float epsilon_ = 1e-5f;
  core::Tensor weight_, dweight_, y_, inv_rms_;
};

}  // namespace mlperf::layers
