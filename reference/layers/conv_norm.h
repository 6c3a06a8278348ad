// Convolution followed by batch norm, an optional residual add and an
// optional ReLU: the unit ResNet is built from (and any conv + BN network).
// Layout (kNCHW / kNHWC) is only a property of the activation tensors; the
// kernels dispatch on it and on the tensors' device (ops::).
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/norm_params.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

// TF "same" (reference: the odd extra pixel of a strided 3x3 at the end) or
// PyTorch-style symmetric padding (torchvision).
enum class PaddingMode { kTfSame, kSymmetric };

// A 2-D convolution geometry with k x k kernels and the mode's padding.
ConvGeometry Conv2dPadded(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_channels,
                          int64_t k, int64_t stride, PaddingMode mode);

// conv (no bias) -> BN -> optional residual add -> optional ReLU, the last
// three in one fused op writing the output. The output and the conv's are
// stored activations (precision.h): in the compute precision's type on a
// device with typed activations (and in channels-last on a host with AMX
// under bf16), else fp32 rounded at the storage points.
class ConvBn {
 public:
  void Allocate(const ConvGeometry& g, core::Layout layout, bool relu, const std::string& conv_name,
                const std::string& bn_name, const ModelArenas& arenas, ParameterRegistry* registry);

  // Training uses batch statistics and updates the running ones. residual,
  // when given, is added to the BN output before the ReLU (a bottleneck's
  // shortcut); it has the output's shape and layout.
  void Forward(const core::Tensor& x, bool training, const BatchNormParams& bn,
               const core::Tensor& workspace, const core::Tensor& residual = core::Tensor());
  // dy: gradient of output(), or with `addend` (any buffer of at least the
  // output's size) dy + addend; dy is overwritten by it, before the ReLU when
  // the unit has one (which is also the residual's gradient). dz: scratch of
  // the output's size. dx: the input gradient, skipped when empty (stem); it
  // may alias dy or the addend but not dz.
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dz,
                const core::Tensor& dx, const core::Tensor& workspace,
                const core::Tensor& addend = core::Tensor());

  const core::Tensor& output() const { return y_; }
  const ConvGeometry& geometry() const { return g_; }
  // Convolution scratch in floats for this unit's geometry and layout.
  int64_t workspace_elements() const;

 private:
  ConvGeometry g_;
  core::Layout layout_ = core::Layout::kNCHW;
  bool relu_ = false;
  core::Tensor w_, gamma_, beta_, dw_, dgamma_, dbeta_;
  core::Tensor running_mean_, running_var_;
  core::Tensor z_, y_, save_mean_, save_inv_std_;
  // The ReLU's mask as bits (ops::ReluMaskWords; on a CUDA device), and
  // whether the last forward wrote it.
  core::Tensor relu_mask_;
  bool mask_written_ = false;
};

}  // namespace mlperf::layers
