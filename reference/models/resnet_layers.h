// Building blocks of ResNet v1.5: a convolution followed by batch norm (and
// optionally ReLU), and the bottleneck block made of three of those plus a
// shortcut. A unit carves every tensor it needs out of the model's arenas in
// Allocate, which the model calls twice (measuring arenas, then real ones), so
// a training step allocates nothing. Layout (kNCHW / kNHWC) is only a property
// of the activation tensors; the kernels dispatch on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/kernels/cpu/norm.h"

namespace mlperf::models {

// TF "same" (reference: the odd extra pixel of a strided 3x3 at the end) or
// PyTorch-style symmetric padding (torchvision).
enum class PaddingMode { kTfSame, kSymmetric };

// The model's arenas: parameters and gradients share one layout; BN running
// statistics; activations, saved statistics and scratch.
struct ModelArenas {
  core::Arena* params;
  core::Arena* grads;
  core::Arena* buffers;
  core::Arena* activations;
};

struct Parameter {
  std::string name;  // torchvision state_dict name
  core::Tensor value;
  core::Tensor grad;
  int64_t fan_in = 0;       // > 0 for convolution kernels (He init)
  bool batch_norm = false;  // gamma or beta
  bool bias = false;
};

struct NamedBuffer {
  std::string name;
  core::Tensor value;
};

// Everything the units registered, in torchvision's state_dict order.
struct Registry {
  std::vector<Parameter> parameters;
  std::vector<NamedBuffer> buffers;
  std::vector<std::string> batch_norms;  // prefixes, for num_batches_tracked
};

// Memory-order shape of an activation with logical sizes n, c, h, w.
core::Shape ActivationShape(core::Layout layout, int64_t n, int64_t c, int64_t h, int64_t w);

// A 2-D convolution geometry with k x k kernels and the mode's padding.
ConvGeometry ResNetConv(int64_t n, int64_t c, int64_t h, int64_t w, int64_t out_channels,
                        int64_t k, int64_t stride, PaddingMode mode);

// conv (no bias) -> BN -> optional residual add -> optional ReLU, the last
// three in one fused pass writing the output.
class ConvBn {
 public:
  void Allocate(const ConvGeometry& g, core::Layout layout, bool relu,
                const std::string& conv_name, const std::string& bn_name,
                const ModelArenas& arenas, Registry* registry);

  // Training uses batch statistics and updates the running ones. residual,
  // when given, is added to the BN output before the ReLU (a bottleneck's
  // shortcut); it has the output's shape and layout.
  void Forward(const core::Tensor& x, bool training, const cpu::BatchNormParams& bn,
               const core::Tensor& workspace, const core::Tensor& residual = core::Tensor());
  // dy: gradient of output() (overwritten by the pre-ReLU gradient when the
  // unit has a ReLU, which is also the residual's gradient). dz: scratch of
  // the output's size. dx: the input gradient, skipped when empty (stem); it
  // may alias dy but not dz.
  void Backward(const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dz,
                const core::Tensor& dx, const core::Tensor& workspace);

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
};

// 1x1 -> BN -> ReLU -> 3x3 (stride here, v1.5) -> BN -> ReLU -> 1x1 -> BN,
// plus the identity or a projection (1x1 with the stride, BN), then ReLU.
class Bottleneck {
 public:
  void Allocate(int64_t batch, int64_t in_channels, int64_t width, int64_t h, int64_t w,
                int64_t stride, bool projection, PaddingMode mode, core::Layout layout,
                const std::string& name, const ModelArenas& arenas, Registry* registry);

  void Forward(const core::Tensor& x, bool training, const cpu::BatchNormParams& bn,
               const core::Tensor& workspace);
  // dout: gradient of output() (consumed). scratch: a buffer of at least the
  // largest activation size. dx receives the input gradient. All three are
  // distinct buffers; they are viewed with the shapes needed.
  void Backward(const core::Tensor& x, const core::Tensor& dout, const core::Tensor& scratch,
                const core::Tensor& dx, const core::Tensor& workspace);

  const core::Tensor& output() const { return conv3_.output(); }
  int64_t out_h() const { return conv2_.geometry().out(1); }
  int64_t out_w() const { return conv2_.geometry().out(2); }
  // ConvForward / backward scratch in floats, the largest of the block's convs.
  int64_t workspace_elements() const;

 private:
  ConvBn conv1_, conv2_, conv3_, shortcut_;
  bool projection_ = false;
};

// `like`'s shape, dtype and layout over the memory of `buffer` (a flat scratch
// tensor at least as large).
core::Tensor ViewAs(const core::Tensor& buffer, const core::Tensor& like);

}  // namespace mlperf::models
