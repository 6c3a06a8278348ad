#include "reference/models/resnet_layers.h"

#include <algorithm>

#include "reference/kernels/dispatch.h"

namespace mlperf::models {

using core::Tensor;

core::Shape ActivationShape(core::Layout layout, int64_t n, int64_t c, int64_t h, int64_t w) {
  return layout == core::Layout::kNHWC ? core::Shape{n, h, w, c} : core::Shape{n, c, h, w};
}

ConvGeometry ResNetConv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_channels,
                        int64_t k, int64_t stride, PaddingMode mode) {
  ConvGeometry g = Conv2d(n, c, h, w, out_channels, k, k, stride, k / 2);
  if (mode == PaddingMode::kTfSame) SetSamePadding(&g);
  return g;
}

Tensor ViewAs(const Tensor& buffer, const Tensor& like) {
  MLPERF_CHECK(buffer.numel() >= like.numel());
  return Tensor(buffer.data(), like.shape(), like.dtype(), like.device(), like.layout());
}

void ConvBn::Allocate(const ConvGeometry& g, core::Layout layout, bool relu,
                      const std::string& conv_name, const std::string& bn_name,
                      const ModelArenas& arenas, Registry* registry) {
  g_ = g;
  layout_ = layout;
  relu_ = relu;
  const int64_t k = g.out_channels;
  const core::Shape w_shape{k, g.in_channels, g.kernel[1], g.kernel[2]};
  w_ = arenas.params->AllocateZeroed(w_shape);
  dw_ = arenas.grads->AllocateZeroed(w_shape);
  registry->parameters.push_back({.name = conv_name + ".weight",
                                  .value = w_,
                                  .grad = dw_,
                                  .fan_in = g.in_channels * g.kernel_volume()});
  gamma_ = arenas.params->AllocateZeroed({k});
  dgamma_ = arenas.grads->AllocateZeroed({k});
  registry->parameters.push_back(
      {.name = bn_name + ".weight", .value = gamma_, .grad = dgamma_, .batch_norm = true});
  beta_ = arenas.params->AllocateZeroed({k});
  dbeta_ = arenas.grads->AllocateZeroed({k});
  registry->parameters.push_back(
      {.name = bn_name + ".bias", .value = beta_, .grad = dbeta_, .batch_norm = true});
  running_mean_ = arenas.buffers->AllocateZeroed({k});
  running_var_ = arenas.buffers->AllocateZeroed({k});
  registry->buffers.push_back({bn_name + ".running_mean", running_mean_});
  registry->buffers.push_back({bn_name + ".running_var", running_var_});
  registry->batch_norms.push_back(bn_name);

  const core::Shape out = ActivationShape(layout, g.batch, k, g.out(1), g.out(2));
  z_ = arenas.activations->Allocate(out, core::DType::kF32, layout);
  y_ = arenas.activations->Allocate(out, core::DType::kF32, layout);
  save_mean_ = arenas.activations->Allocate({k});
  save_inv_std_ = arenas.activations->Allocate({k});
}

void ConvBn::Forward(const Tensor& x, bool training, const cpu::BatchNormParams& bn,
                     const Tensor& workspace, const Tensor& residual) {
  ops::ConvForward(g_, x, w_, z_, workspace);
  if (training) {
    ops::BatchNormActForwardTraining(bn, relu_, z_, residual, gamma_, beta_, y_, save_mean_,
                                     save_inv_std_, running_mean_, running_var_);
  } else {
    ops::BatchNormActForwardInference(bn, relu_, z_, residual, gamma_, beta_, running_mean_,
                                      running_var_, y_);
  }
}

void ConvBn::Backward(const Tensor& x, const Tensor& dy, const Tensor& dz, const Tensor& dx,
                      const Tensor& workspace) {
  const Tensor dy_view = ViewAs(dy, y_);
  const Tensor dz_view = ViewAs(dz, z_);
  ops::BatchNormActBackward(relu_, z_, y_, dy_view, gamma_, save_mean_, save_inv_std_, dz_view,
                            dgamma_, dbeta_);
  ops::ConvBackwardWeight(g_, x, dz_view, dw_, workspace);
  if (!dx.empty()) ops::ConvBackwardData(g_, dz_view, w_, ViewAs(dx, x), workspace);
}

void Bottleneck::Allocate(int64_t batch, int64_t in_channels, int64_t width, int64_t h, int64_t w,
                          int64_t stride, bool projection, PaddingMode mode, core::Layout layout,
                          const std::string& name, const ModelArenas& arenas,
                          Registry* registry) {
  projection_ = projection;
  const int64_t out_channels = 4 * width;
  const ConvGeometry g1 = ResNetConv(batch, in_channels, h, w, width, 1, 1, mode);
  conv1_.Allocate(g1, layout, true, name + ".conv1", name + ".bn1", arenas, registry);
  const ConvGeometry g2 = ResNetConv(batch, width, h, w, width, 3, stride, mode);
  conv2_.Allocate(g2, layout, true, name + ".conv2", name + ".bn2", arenas, registry);
  const ConvGeometry g3 = ResNetConv(batch, width, g2.out(1), g2.out(2), out_channels, 1, 1, mode);
  // The unit's ReLU follows the residual add, which it fuses.
  conv3_.Allocate(g3, layout, true, name + ".conv3", name + ".bn3", arenas, registry);
  if (projection) {
    const ConvGeometry gs = ResNetConv(batch, in_channels, h, w, out_channels, 1, stride, mode);
    MLPERF_CHECK(gs.out(1) == g2.out(1) && gs.out(2) == g2.out(2));
    shortcut_.Allocate(gs, layout, false, name + ".downsample.0", name + ".downsample.1", arenas,
                       registry);
  } else {
    MLPERF_CHECK(stride == 1 && in_channels == out_channels);
  }
}

int64_t ConvBn::workspace_elements() const {
  return ops::ConvWorkspaceElements(g_, layout_, w_.device());
}

int64_t Bottleneck::workspace_elements() const {
  int64_t n = std::max({conv1_.workspace_elements(), conv2_.workspace_elements(),
                        conv3_.workspace_elements()});
  if (projection_) n = std::max(n, shortcut_.workspace_elements());
  return n;
}

void Bottleneck::Forward(const Tensor& x, bool training, const cpu::BatchNormParams& bn,
                         const Tensor& workspace) {
  conv1_.Forward(x, training, bn, workspace);
  conv2_.Forward(conv1_.output(), training, bn, workspace);
  if (projection_) shortcut_.Forward(x, training, bn, workspace);
  conv3_.Forward(conv2_.output(), training, bn, workspace, projection_ ? shortcut_.output() : x);
}

void Bottleneck::Backward(const Tensor& x, const Tensor& dout, const Tensor& scratch,
                          const Tensor& dx, const Tensor& workspace) {
  // conv3's backward turns dout into the gradient of the sum (before the
  // final ReLU), which dout holds until both branches have read it; scratch
  // and dx take turns as the main branch flows back, and dx ends with the
  // main branch's input gradient.
  const Tensor dsum = ViewAs(dout, output());
  conv3_.Backward(conv2_.output(), dsum, scratch, dx, workspace);
  conv2_.Backward(conv1_.output(), dx, scratch, dx, workspace);
  conv1_.Backward(x, dx, scratch, dx, workspace);
  const Tensor dx_view = ViewAs(dx, x);
  if (projection_) {
    // dsum is dead once the shortcut's BN has read it: reuse it for dx_short.
    shortcut_.Backward(x, dsum, scratch, dout, workspace);
    ops::Accumulate(ViewAs(dout, x), dx_view);
  } else {
    ops::Accumulate(dsum, dx_view);
  }
}

}  // namespace mlperf::models
