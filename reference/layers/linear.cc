#include "reference/layers/linear.h"

#include "base/check.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/ops/fp8.h"

namespace mlperf::layers {

void Linear::Allocate(int64_t rows, int64_t in_features, int64_t out_features,
                      Activation activation, const std::string& name, const ModelArenas& arenas,
                      ParameterRegistry* registry, core::DType stored, bool with_bias, bool fp8) {
  MLPERF_CHECK_MSG(stored == core::DType::kF32 || activation == Activation::kNone ||
                       activation == Activation::kGelu,
                   "a linear layer stores ReLU and tanh outputs in fp32");
  activation_ = activation;
  const Parameter w =
      AddParameter(arenas, registry, {out_features, in_features}, {.name = name + ".weight"});
  w_ = w.value;
  dw_ = w.grad;
  if (with_bias) {
    const Parameter b =
        AddParameter(arenas, registry, {out_features}, {.name = name + ".bias", .bias = true});
    b_ = b.value;
    db_ = b.grad;
  }
  if (fp8) {
    fp8_ = arenas.buffers->Allocate({ops::kFp8StateFloats});
    if (fp8_.data() != nullptr) ops::ResetFp8Scaling(fp8_);
    registry->buffers.push_back({name + ".fp8_scaling", fp8_});
    registry->fp8_scaling.push_back(fp8_);
  }
  y_ = arenas.activations->Allocate({rows, out_features}, stored);
  z_ = activation == Activation::kGelu ? arenas.activations->Allocate({rows, out_features}, stored)
                                       : y_;
}

void Linear::Forward(const core::Tensor& x) {
  if (fp8_.empty()) {
    ops::LinearForward(x, w_, b_, z_);
  } else {
    ops::Fp8LinearForward(x, w_, b_, z_, fp8_);
  }
  if (activation_ == Activation::kRelu) ops::ReluForward(y_, y_);
  if (activation_ == Activation::kGelu) ops::GeluForward(z_, y_);
  if (activation_ == Activation::kTanh) ops::TanhForward(y_, y_);
}

void Linear::Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx) {
  if (activation_ == Activation::kRelu) ops::ReluBackward(y_, dy, dy);
  if (activation_ == Activation::kGelu) ops::GeluBackward(z_, dy, dy);
  if (activation_ == Activation::kTanh) ops::TanhBackward(y_, dy, dy);
  if (fp8_.empty()) return ops::LinearBackward(x, w_, dy, dx, dw_, db_);
  ops::Fp8LinearBackward(x, w_, dy, dx, dw_, db_, fp8_);
}

}  // namespace mlperf::layers
