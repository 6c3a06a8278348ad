#include "reference/layers/conv_instance_norm.h"

#include "reference/kernels/composite.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::layers {

using core::Tensor;

core::Shape VolumeShape(core::Layout layout, int64_t n, int64_t c, int64_t d, int64_t h,
                        int64_t w) {
  return layout == core::Layout::kNDHWC ? core::Shape{n, d, h, w, c} : core::Shape{n, c, d, h, w};
}

void ConvInstanceNormRelu::Allocate(const ConvGeometry& g, core::Layout layout, float epsilon,
                                    const std::string& name, const ModelArenas& arenas,
                                    ParameterRegistry* registry, core::DType stored) {
  g_ = g;
  layout_ = layout;
  epsilon_ = epsilon;
  const int64_t k = g.out_channels;
  const Parameter w =
      AddParameter(arenas, registry, {k, g.in_channels, g.kernel[0], g.kernel[1], g.kernel[2]},
                   {.name = name + ".0.weight", .fan_in = g.in_channels * g.kernel_volume()});
  const Parameter gamma =
      AddParameter(arenas, registry, {k}, {.name = name + ".1.weight", .batch_norm = true});
  const Parameter beta =
      AddParameter(arenas, registry, {k}, {.name = name + ".1.bias", .batch_norm = true});
  w_ = w.value;
  dw_ = w.grad;
  gamma_ = gamma.value;
  dgamma_ = gamma.grad;
  beta_ = beta.value;
  dbeta_ = beta.grad;
  const core::Shape out = VolumeShape(layout, g.batch, k, g.out(0), g.out(1), g.out(2));
  z_ = arenas.activations->Allocate(out, stored, layout);
  y_ = arenas.activations->Allocate(out, stored, layout);
  save_mean_ = arenas.activations->Allocate({g.batch * k});
  save_inv_std_ = arenas.activations->Allocate({g.batch * k});
  if (arenas.activations->device() == core::Device::kCuda)
    relu_mask_ = arenas.activations->Allocate({ops::ReluMaskWords(y_)}, core::DType::kI32);
}

void ConvInstanceNormRelu::Forward(const Tensor& x, const Tensor& workspace) {
  ops::ConvForward(g_, x, w_, z_, workspace);
  // The mask where y_ is stored in the precision's type (fp32 storage is
  // rounded after the ReLU, which could flush a tiny y to zero).
  mask_written_ = !relu_mask_.empty() && y_.dtype() == ops::ComputePrecision();
  // The op stores y_ rounded: its consumers round it anyway, but the ReLU's
  // backward reads its sign, which fp16's flush of the tiniest values
  // changes.
  ops::InstanceNormReluForward(epsilon_, z_, gamma_, beta_, y_, save_mean_, save_inv_std_,
                               mask_written_ ? relu_mask_ : Tensor());
}

void ConvInstanceNormRelu::Backward(const Tensor& x, const Tensor& dy, const Tensor& dz,
                                    const Tensor& dx, const Tensor& workspace) {
  const Tensor dy_view = ViewAs(dy, y_), dz_view = ViewAs(dz, z_);
  ops::InstanceNormReluBackward(z_, y_, dy_view, gamma_, save_mean_, save_inv_std_, dz_view,
                                dgamma_, dbeta_, mask_written_ ? relu_mask_ : Tensor());
  ops::ConvBackwardWeight(g_, x, dz_view, dw_, workspace);
  if (!dx.empty()) ops::ConvBackwardData(g_, dz_view, w_, ViewAs(dx, x), workspace);
}

int64_t ConvInstanceNormRelu::workspace_elements() const {
  return ops::ConvWorkspaceElements(g_, layout_, w_.device());
}

void BiasedConv::Allocate(const ConvGeometry& g, bool transposed, core::Layout layout,
                          const std::string& name, const ModelArenas& arenas,
                          ParameterRegistry* registry, core::DType stored) {
  g_ = g;
  transposed_ = transposed;
  layout_ = layout;
  // The weight is [out_channels, in_channels, k...] of g either way; g's
  // in_channels is the transposed convolution's output.
  const int64_t dim1 = g.in_channels, kvol = g.kernel_volume();
  const int64_t fan_in = transposed ? dim1 * kvol : g.in_channels * kvol;
  const int64_t out_channels = transposed ? g.in_channels : g.out_channels;
  const Parameter w =
      AddParameter(arenas, registry, {g.out_channels, dim1, g.kernel[0], g.kernel[1], g.kernel[2]},
                   {.name = name + ".0.weight", .fan_in = fan_in});
  const Parameter b = AddParameter(arenas, registry, {out_channels},
                                   {.name = name + ".0.bias", .fan_in = fan_in, .bias = true});
  w_ = w.value;
  dw_ = w.grad;
  b_ = b.value;
  db_ = b.grad;
  const core::Shape out =
      transposed ? VolumeShape(layout, g.batch, out_channels, g.in[0], g.in[1], g.in[2])
                 : VolumeShape(layout, g.batch, out_channels, g.out(0), g.out(1), g.out(2));
  y_ = arenas.activations->Allocate(out, stored, layout);
}

void BiasedConv::Forward(const Tensor& x, const Tensor& workspace) {
  if (transposed_) {
    ops::ConvTransposeForward(g_, x, w_, y_, workspace);
  } else {
    ops::ConvForward(g_, x, w_, y_, workspace);
  }
  ops::BiasAddChannels(b_, y_);
}

void BiasedConv::Backward(const Tensor& x, const Tensor& dy, const Tensor& dx,
                          const Tensor& workspace) {
  const Tensor dy_view = ViewAs(dy, y_), dx_view = ViewAs(dx, x);
  ops::BiasBackwardChannels(dy_view, db_);
  if (transposed_) {
    ops::ConvTransposeBackwardWeight(g_, x, dy_view, dw_, workspace);
    ops::ConvTransposeBackwardData(g_, dy_view, w_, dx_view, workspace);
  } else {
    ops::ConvBackwardWeight(g_, x, dy_view, dw_, workspace);
    ops::ConvBackwardData(g_, dy_view, w_, dx_view, workspace);
  }
}

int64_t BiasedConv::workspace_elements() const {
  return ops::ConvWorkspaceElements(g_, layout_, w_.device());
}

}  // namespace mlperf::layers
