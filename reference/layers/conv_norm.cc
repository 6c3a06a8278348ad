#include "reference/layers/conv_norm.h"

#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::layers {

using core::Tensor;

ConvGeometry Conv2dPadded(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_channels,
                          int64_t k, int64_t stride, PaddingMode mode) {
  ConvGeometry g = Conv2d(n, c, h, w, out_channels, k, k, stride, k / 2);
  if (mode == PaddingMode::kTfSame) SetSamePadding(&g);
  return g;
}

void ConvBn::Allocate(const ConvGeometry& g, core::Layout layout, bool relu,
                      const std::string& conv_name, const std::string& bn_name,
                      const ModelArenas& arenas, ParameterRegistry* registry) {
  g_ = g;
  layout_ = layout;
  relu_ = relu;
  const int64_t k = g.out_channels;
  const core::Shape w_shape{k, g.in_channels, g.kernel[1], g.kernel[2]};
  const Parameter w =
      AddParameter(arenas, registry, w_shape,
                   {.name = conv_name + ".weight", .fan_in = g.in_channels * g.kernel_volume()});
  const Parameter gamma =
      AddParameter(arenas, registry, {k}, {.name = bn_name + ".weight", .batch_norm = true});
  const Parameter beta =
      AddParameter(arenas, registry, {k}, {.name = bn_name + ".bias", .batch_norm = true});
  w_ = w.value;
  dw_ = w.grad;
  gamma_ = gamma.value;
  dgamma_ = gamma.grad;
  beta_ = beta.value;
  dbeta_ = beta.grad;
  running_mean_ = arenas.buffers->AllocateZeroed({k});
  running_var_ = arenas.buffers->AllocateZeroed({k});
  registry->buffers.push_back({bn_name + ".running_mean", running_mean_});
  registry->buffers.push_back({bn_name + ".running_var", running_var_});
  registry->batch_norms.push_back(bn_name);

  const core::Shape out = ActivationShape(layout, g.batch, k, g.out(1), g.out(2));
  // The host kernels of this unit take bf16 storage in channels-last.
  const bool channels_last = layout == core::Layout::kNHWC || layout == core::Layout::kNDHWC;
  const core::DType stored =
      ops::ActivationStorageType(arenas.activations->device(), channels_last);
  z_ = arenas.activations->Allocate(out, stored, layout);
  y_ = arenas.activations->Allocate(out, stored, layout);
  save_mean_ = arenas.activations->Allocate({k});
  save_inv_std_ = arenas.activations->Allocate({k});
  if (relu && arenas.activations->device() == core::Device::kCuda)
    relu_mask_ = arenas.activations->Allocate({ops::ReluMaskWords(y_)}, core::DType::kI32);
}

void ConvBn::Forward(const Tensor& x, bool training, const BatchNormParams& bn,
                     const Tensor& workspace, const Tensor& residual) {
  // The batch norm rounds the normalised value before the residual add under
  // bf16/fp16, and y_ (ops/precision.h). The mask where y_ is stored in the
  // precision's type: rounding it in place afterwards could flush a tiny y
  // to zero, and the sign with it; in training only, whose backward reads it.
  mask_written_ = training && relu_ && !relu_mask_.empty() && y_.dtype() == ops::ComputePrecision();
  const Tensor mask = mask_written_ ? relu_mask_ : Tensor();
  if (training) {
    ops::ConvForward(g_, x, w_, z_, workspace);
    ops::BatchNormActForwardTraining(bn, relu_, z_, residual, gamma_, beta_, y_, save_mean_,
                                     save_inv_std_, running_mean_, running_var_, mask);
  } else {
    // One op, so that the batch norm may go into the convolution's epilogue.
    ops::ConvBatchNormActForwardInference(g_, x, w_, z_, workspace, bn, relu_, residual, gamma_,
                                          beta_, running_mean_, running_var_, y_);
  }
}

void ConvBn::Backward(const Tensor& x, const Tensor& dy, const Tensor& dz, const Tensor& dx,
                      const Tensor& workspace, const Tensor& addend) {
  const Tensor dy_view = ViewAs(dy, y_);
  const Tensor dz_view = ViewAs(dz, z_);
  // The masked dy (+ addend, stored) stays representable; dz is stored (by
  // the op).
  ops::BatchNormActBackward(relu_, z_, y_, dy_view, gamma_, save_mean_, save_inv_std_, dz_view,
                            dgamma_, dbeta_, addend.empty() ? Tensor() : ViewAs(addend, y_),
                            mask_written_ ? relu_mask_ : Tensor());
  ops::ConvBackwardWeight(g_, x, dz_view, dw_, workspace);
  if (!dx.empty()) ops::ConvBackwardData(g_, dz_view, w_, ViewAs(dx, x), workspace);
}

int64_t ConvBn::workspace_elements() const {
  return ops::ConvWorkspaceElements(g_, layout_, w_.device());
}

}  // namespace mlperf::layers
