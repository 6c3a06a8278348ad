// Batch-norm hyperparameters, shared by both backends and by the layers that
// call them (so that models and CUDA headers need no kernels/cpu header).
#pragma once

namespace mlperf {

// `momentum` is the weight of the new batch statistic, PyTorch's convention:
//   running = (1 - momentum) * running + momentum * batch.
// Keras' momentum=0.9 (ResNet reference) is momentum=0.1 here.
struct BatchNormParams {
  float epsilon = 1e-5f;
  float momentum = 0.1f;
};

}  // namespace mlperf
