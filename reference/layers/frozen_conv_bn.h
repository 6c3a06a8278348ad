// Convolution followed by a frozen batch norm (torchvision's
// FrozenBatchNorm2d: weight, bias, running mean and variance all buffers,
// never updated), an optional residual add and an optional ReLU: the unit
// of a detection backbone (RetinaNet's ResNeXt). Channels-first fp32.
#pragma once

#include <string>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

class FrozenConvBn {
 public:
  // FrozenBatchNorm2d's epsilon.
  static constexpr float kEpsilon = 1e-5f;

  // trainable: the convolution's weight is a trainable parameter (else a
  // frozen one: a backbone's first layers).
  void Allocate(const ConvGeometry& g, bool relu, bool trainable, const std::string& conv_name,
                const std::string& bn_name, const ModelArenas& arenas, ParameterRegistry* registry);
  void Forward(const core::Tensor& x, const core::Tensor& workspace,
               const core::Tensor& residual = core::Tensor());
  // dy: the gradient of output(); masked by the ReLU in place (then also the
  // residual's gradient). dz: scratch of the output's size. dx: skipped when
  // empty. The weight's gradient when it is trainable.
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dz,
                const core::Tensor& dx, const core::Tensor& workspace);

  const core::Tensor& output() const { return y_; }
  const ConvGeometry& geometry() const { return g_; }
  const core::Tensor& weight() const { return w_; }
  int64_t workspace_elements() const;

 private:
  ConvGeometry g_;
  bool relu_ = false;
  core::Tensor w_, dw_, gamma_, beta_, running_mean_, running_var_, z_, y_;
};

}  // namespace mlperf::layers
