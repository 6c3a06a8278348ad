#include "reference/models/resnet_blocks.h"

#include <algorithm>

#include "base/check.h"
#include "reference/kernels/dispatch.h"
#include "reference/kernels/precision.h"

namespace mlperf::models {

using core::Tensor;
using layers::Conv2dPadded;
using layers::ViewAs;

void Bottleneck::Allocate(int64_t batch, int64_t in_channels, int64_t width, int64_t h, int64_t w,
                          int64_t stride, bool projection, layers::PaddingMode mode,
                          core::Layout layout, const std::string& name,
                          const layers::ModelArenas& arenas, layers::ParameterRegistry* registry) {
  projection_ = projection;
  const int64_t out_channels = 4 * width;
  const ConvGeometry g1 = Conv2dPadded(batch, in_channels, h, w, width, 1, 1, mode);
  conv1_.Allocate(g1, layout, true, name + ".conv1", name + ".bn1", arenas, registry);
  const ConvGeometry g2 = Conv2dPadded(batch, width, h, w, width, 3, stride, mode);
  conv2_.Allocate(g2, layout, true, name + ".conv2", name + ".bn2", arenas, registry);
  const ConvGeometry g3 =
      Conv2dPadded(batch, width, g2.out(1), g2.out(2), out_channels, 1, 1, mode);
  // The unit's ReLU follows the residual add, which it fuses.
  conv3_.Allocate(g3, layout, true, name + ".conv3", name + ".bn3", arenas, registry);
  if (projection) {
    const ConvGeometry gs = Conv2dPadded(batch, in_channels, h, w, out_channels, 1, stride, mode);
    MLPERF_CHECK(gs.out(1) == g2.out(1) && gs.out(2) == g2.out(2));
    shortcut_.Allocate(gs, layout, false, name + ".downsample.0", name + ".downsample.1", arenas,
                       registry);
  } else {
    MLPERF_CHECK(stride == 1 && in_channels == out_channels);
  }
}

int64_t Bottleneck::workspace_elements() const {
  int64_t n = std::max(
      {conv1_.workspace_elements(), conv2_.workspace_elements(), conv3_.workspace_elements()});
  if (projection_) n = std::max(n, shortcut_.workspace_elements());
  return n;
}

void Bottleneck::Forward(const Tensor& x, bool training, const BatchNormParams& bn,
                         const Tensor& workspace) {
  conv1_.Forward(x, training, bn, workspace);
  conv2_.Forward(conv1_.output(), training, bn, workspace);
  if (projection_) shortcut_.Forward(x, training, bn, workspace);
  conv3_.Forward(conv2_.output(), training, bn, workspace, projection_ ? shortcut_.output() : x);
}

void Bottleneck::Backward(const Tensor& x, const Tensor& dout, const Tensor& addend,
                          const Tensor& scratch, const Tensor& dx, const Tensor& workspace) {
  // conv3's backward turns dout (+ addend) into the gradient of the sum
  // (before the final ReLU), which dout holds until both branches have read
  // it; the addend is spent then, so dx may be its buffer. scratch and dx
  // take turns as the main branch flows back, and dx ends with the main
  // branch's input gradient.
  const Tensor dsum = ViewAs(dout, output());
  conv3_.Backward(conv2_.output(), dsum, scratch, dx, workspace, addend);
  conv2_.Backward(conv1_.output(), dx, scratch, dx, workspace);
  conv1_.Backward(x, dx, scratch, dx, workspace);
  // The shortcut's gradient stays in dout: the identity's is dsum itself; a
  // projection's is written over dsum once its BN has read it.
  if (projection_) shortcut_.Backward(x, dsum, scratch, dout, workspace);
}

}  // namespace mlperf::models
