#include "reference/layers/rms_norm.h"

#include "reference/kernels/ops/decoder.h"

namespace mlperf::layers {

void RmsNorm::Allocate(int64_t rows, int64_t features, float epsilon, const std::string& name,
                       const ModelArenas& arenas, ParameterRegistry* registry) {
  epsilon_ = epsilon;
  const Parameter w =
      AddParameter(arenas, registry, {features}, {.name = name + ".weight", .batch_norm = true});
  weight_ = w.value;
  // A frozen scale's gradient goes to scratch (the kernel writes it).
  dweight_ = w.grad.empty() ? arenas.activations->Allocate({features}) : w.grad;
  y_ = arenas.activations->Allocate({rows, features});
  inv_rms_ = arenas.activations->Allocate({rows});
}

void RmsNorm::Forward(const core::Tensor& x) {
  ops::RmsNormForward(epsilon_, x, weight_, y_, inv_rms_);
}

void RmsNorm::Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx) {
  ops::RmsNormBackward(x, dy, weight_, inv_rms_, dx, dweight_);
}

}  // namespace mlperf::layers
