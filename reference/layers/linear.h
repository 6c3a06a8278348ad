// A fully connected layer y = act(x W^T + b) (W stored [out, in], PyTorch
// order) with no activation, ReLU, BERT's tanh GELU or tanh (its pooler), on
// either backend.
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

enum class Activation { kNone, kRelu, kGelu, kTanh };

class Linear {
 public:
  // rows: samples per call (the batch). Registers name.weight and, unless
  // `with_bias` is false (Llama's projections), name.bias. `stored`: the
  // output's type (and GELU's input's), fp32 or, with no activation or GELU,
  // a reduced one (kernels/precision.h). `fp8`: its GEMMs run in FP8
  // (kernels/ops/fp8.h) with a scaling state registered as the buffer
  // name.fp8_scaling (a transformer block's layers under --precision fp8).
  void Allocate(int64_t rows, int64_t in_features, int64_t out_features, Activation activation,
                const std::string& name, const ModelArenas& arenas, ParameterRegistry* registry,
                core::DType stored = core::DType::kF32, bool with_bias = true, bool fp8 = false);
  void Forward(const core::Tensor& x);
  // dy: gradient of output(), consumed (it becomes the pre-activation
  // gradient). dx: the input gradient, skipped when empty (first layer).
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx);

  const core::Tensor& output() const { return y_; }
  const core::Tensor& weight() const { return w_; }

 private:
  Activation activation_ = Activation::kNone;
  // z_: the pre-activation output, kept for GELU's backward.
  core::Tensor w_, b_, dw_, db_, z_, y_;
  core::Tensor fp8_;  // the FP8 scaling state; empty: the GEMMs of the precision
};

}  // namespace mlperf::layers
