// The bottleneck block of ResNet v1.5: three conv + BN units and a
// shortcut (identity or projection), the stride in the 3x3.
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/layers/conv_norm.h"
#include "reference/layers/parameters.h"

namespace mlperf::models {

// 1x1 -> BN -> ReLU -> 3x3 (stride here, v1.5) -> BN -> ReLU -> 1x1 -> BN,
// plus the identity or a projection (1x1 with the stride, BN), then ReLU.
class Bottleneck {
 public:
  void Allocate(int64_t batch, int64_t in_channels, int64_t width, int64_t h, int64_t w,
                int64_t stride, bool projection, layers::PaddingMode mode, core::Layout layout,
                const std::string& name, const layers::ModelArenas& arenas,
                layers::ParameterRegistry* registry);

  void Forward(const core::Tensor& x, bool training, const BatchNormParams& bn,
               const core::Tensor& workspace);
  // The gradient of output() is dout + addend (the next block's two
  // branches; addend may be empty), added within the last unit's batch norm
  // backward rather than apart. Both are consumed; scratch is a buffer of at
  // least the largest activation size. On return the input gradient is dx +
  // dout (this block's two branches, for the block before it). dout,
  // scratch and dx are distinct buffers; dx may be the addend's. They are
  // viewed with the shapes needed.
  void Backward(const core::Tensor& x, const core::Tensor& dout, const core::Tensor& addend,
                const core::Tensor& scratch, const core::Tensor& dx, const core::Tensor& workspace);

  const core::Tensor& output() const { return conv3_.output(); }
  int64_t out_h() const { return conv2_.geometry().out(1); }
  int64_t out_w() const { return conv2_.geometry().out(2); }
  // ConvForward / backward scratch in floats, the largest of the block's convs.
  int64_t workspace_elements() const;

 private:
  layers::ConvBn conv1_, conv2_, conv3_, shortcut_;
  bool projection_ = false;
};

}  // namespace mlperf::models
