// The units 3D U-Net is built from (MLPerf reference image_segmentation
// model/layers.py): a 3x3x3 convolution without bias -> instance norm
// (affine, eps 1e-5, no running statistics) -> ReLU; a transposed
// convolution with bias (upsampling); a pointwise convolution with bias (the
// output layer). Parameter names follow the reference's state_dict, where a
// unit is an nn.Sequential: "<name>.0.weight" for the convolution,
// "<name>.1.weight" / ".1.bias" for the norm.
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

// Memory-order shape of a volume activation with logical sizes n, c, d, h, w.
core::Shape VolumeShape(core::Layout layout, int64_t n, int64_t c, int64_t d, int64_t h, int64_t w);

class ConvInstanceNormRelu {
 public:
  // `stored`: the type of the convolution's and the unit's outputs, fp32 or
  // the compute precision's (kernels/precision.h).
  void Allocate(const ConvGeometry& g, core::Layout layout, float epsilon, const std::string& name,
                const ModelArenas& arenas, ParameterRegistry* registry,
                core::DType stored = core::DType::kF32);
  // Under bf16/fp16 the output is stored rounded (after the ReLU).
  void Forward(const core::Tensor& x, const core::Tensor& workspace);
  // dy: gradient of output(), overwritten (the gradient before the ReLU); dz:
  // scratch of the output's size; dx: the input gradient, skipped when empty.
  // dx must not alias dy or dz.
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dz,
                const core::Tensor& dx, const core::Tensor& workspace);

  const core::Tensor& output() const { return y_; }
  const ConvGeometry& geometry() const { return g_; }
  int64_t workspace_elements() const;

 private:
  ConvGeometry g_;
  core::Layout layout_ = core::Layout::kNCDHW;
  float epsilon_ = 1e-5f;
  core::Tensor w_, gamma_, beta_, dw_, dgamma_, dbeta_;
  core::Tensor z_, y_, save_mean_, save_inv_std_;
  // The ReLU's mask as bits (ops::ReluMaskWords; on a CUDA device), and
  // whether the last forward wrote it.
  core::Tensor relu_mask_;
  bool mask_written_ = false;
};

// A convolution with bias, forward or transposed. For a transposed one, `g`
// describes the convolution it is the adjoint of (kernels/composite.h): its
// input is g.out(), its output g.in, with g.in_channels output channels; the
// weight is [in, out, k, k, k] as PyTorch's ConvTranspose3d, whose default
// initialisation takes fan_in from the weight's second dimension.
class BiasedConv {
 public:
  // `stored`: the output's type, as ConvInstanceNormRelu's.
  void Allocate(const ConvGeometry& g, bool transposed, core::Layout layout,
                const std::string& name, const ModelArenas& arenas, ParameterRegistry* registry,
                core::DType stored = core::DType::kF32);
  void Forward(const core::Tensor& x, const core::Tensor& workspace);
  // dy: gradient of output(); dx: the input gradient (must not alias dy).
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx,
                const core::Tensor& workspace);

  const core::Tensor& output() const { return y_; }
  int64_t workspace_elements() const;

 private:
  ConvGeometry g_;
  bool transposed_ = false;
  core::Layout layout_ = core::Layout::kNCDHW;
  core::Tensor w_, b_, dw_, db_, y_;
};

}  // namespace mlperf::layers
