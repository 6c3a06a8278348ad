// A convolution with a bias and an optional ReLU, whose one set of weights
// may run at several sites of different sizes (a detector's heads, shared
// over the pyramid levels; an FPN's convolutions run at one). Each site has
// its geometry and its own activations; the gradients of the sites add up.
// Channels-first fp32.
#pragma once

#include <string>
#include <vector>

#include "reference/core/tensor.h"
#include "reference/kernels/conv_geometry.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

class ConvBias {
 public:
  // Registers `name`.weight [out, in, k, k] and `name`.bias.
  void Allocate(int64_t in_channels, int64_t out_channels, int64_t kernel, bool relu,
                const std::string& name, const ModelArenas& arenas, ParameterRegistry* registry);
  // A site where the convolution runs (same channels and kernel as
  // Allocate); returns its index.
  int AddSite(const ConvGeometry& g, const ModelArenas& arenas);

  void Forward(int site, const core::Tensor& x, const core::Tensor& workspace);
  // dy: the gradient of output(site), masked by the ReLU in place. Sets the
  // weight and bias gradients, or adds to them (`accumulate`: the sites after
  // the first). dx: skipped when empty.
  void Backward(int site, const core::Tensor& x, const core::Tensor& dy, const core::Tensor& dx,
                const core::Tensor& workspace, bool accumulate);

  const core::Tensor& output(int site) const { return sites_[site].y; }
  const ConvGeometry& geometry(int site) const { return sites_[site].g; }
  const core::Tensor& weight() const { return w_; }
  const core::Tensor& bias() const { return b_; }
  int64_t workspace_elements() const;

 private:
  struct Site {
    ConvGeometry g;
    core::Tensor y;
  };
  int64_t in_ = 0, out_ = 0, kernel_ = 0;
  bool relu_ = false;
  core::Tensor w_, b_, dw_, db_, dw_site_, db_site_;
  std::vector<Site> sites_;
};

}  // namespace mlperf::layers
