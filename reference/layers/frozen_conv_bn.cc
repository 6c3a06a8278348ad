#include "reference/layers/frozen_conv_bn.h"

#include "reference/kernels/dispatch.h"

namespace mlperf::layers {

using core::Tensor;

void FrozenConvBn::Allocate(const ConvGeometry& g, bool relu, bool trainable,
                            const std::string& conv_name, const std::string& bn_name,
                            const ModelArenas& arenas, ParameterRegistry* registry) {
  g_ = g;
  relu_ = relu;
  const int64_t k = g.out_channels;
  const Parameter w =
      AddParameter(arenas, registry, {k, g.group_in_channels(), g.kernel[1], g.kernel[2]},
                   {.name = conv_name + ".weight",
                    .fan_in = g.group_in_channels() * g.kernel_volume(),
                    .trainable = trainable});
  w_ = w.value;
  dw_ = w.grad;
  for (auto [name, t] :
       {std::pair{".weight", &gamma_}, std::pair{".bias", &beta_},
        std::pair{".running_mean", &running_mean_}, std::pair{".running_var", &running_var_}}) {
    *t = arenas.buffers->AllocateZeroed({k});
    registry->buffers.push_back({bn_name + name, *t});
  }
  const core::Shape out{g.batch, k, g.out(1), g.out(2)};
  z_ = arenas.activations->Allocate(out, core::DType::kF32, core::Layout::kNCHW);
  y_ = arenas.activations->Allocate(out, core::DType::kF32, core::Layout::kNCHW);
}

void FrozenConvBn::Forward(const Tensor& x, const Tensor& workspace, const Tensor& residual) {
  ops::ConvForward(g_, x, w_, z_, workspace);
  ops::BatchNormActForwardInference({.epsilon = kEpsilon}, relu_, z_, residual, gamma_, beta_,
                                    running_mean_, running_var_, y_);
}

void FrozenConvBn::Backward(const Tensor& x, const Tensor& dy, const Tensor& dz, const Tensor& dx,
                            const Tensor& workspace) {
  const Tensor dy_view = ViewAs(dy, y_), dz_view = ViewAs(dz, z_);
  if (relu_) ops::ReluBackward(y_, dy_view, dy_view);
  ops::FrozenBatchNormBackward(dy_view, gamma_, running_var_, kEpsilon, dz_view);
  if (!dw_.empty()) ops::ConvBackwardWeight(g_, x, dz_view, dw_, workspace);
  if (!dx.empty()) ops::ConvBackwardData(g_, dz_view, w_, ViewAs(dx, x), workspace);
}

int64_t FrozenConvBn::workspace_elements() const {
  return ops::ConvWorkspaceElements(g_, core::Layout::kNCHW, w_.device());
}

}  // namespace mlperf::layers
