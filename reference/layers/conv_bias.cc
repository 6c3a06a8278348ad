#include "reference/layers/conv_bias.h"

#include <algorithm>

#include "base/check.h"
#include "reference/kernels/dispatch.h"

namespace mlperf::layers {

using core::Tensor;

void ConvBias::Allocate(int64_t in_channels, int64_t out_channels, int64_t kernel, bool relu,
                        const std::string& name, const ModelArenas& arenas,
                        ParameterRegistry* registry) {
  sites_.clear();  // a model lays itself out twice (measuring, then real arenas)
  in_ = in_channels;
  out_ = out_channels;
  kernel_ = kernel;
  relu_ = relu;
  const Parameter w =
      AddParameter(arenas, registry, {out_channels, in_channels, kernel, kernel},
                   {.name = name + ".weight", .fan_in = in_channels * kernel * kernel});
  const Parameter b =
      AddParameter(arenas, registry, {out_channels}, {.name = name + ".bias", .bias = true});
  w_ = w.value;
  dw_ = w.grad;
  b_ = b.value;
  db_ = b.grad;
  // Each site's gradients before they are added to the others'.
  dw_site_ = arenas.activations->Allocate(w_.shape());
  db_site_ = arenas.activations->Allocate(b_.shape());
}

int ConvBias::AddSite(const ConvGeometry& g, const ModelArenas& arenas) {
  MLPERF_CHECK(g.in_channels == in_ && g.out_channels == out_ && g.kernel[1] == kernel_ &&
               g.kernel[2] == kernel_ && g.groups == 1);
  sites_.push_back({g, arenas.activations->Allocate({g.batch, out_, g.out(1), g.out(2)},
                                                    core::DType::kF32, core::Layout::kNCHW)});
  return static_cast<int>(sites_.size()) - 1;
}

void ConvBias::Forward(int site, const Tensor& x, const Tensor& workspace) {
  const Site& s = sites_[site];
  ops::ConvForward(s.g, x, w_, s.y, workspace);
  ops::BiasAddChannels(b_, s.y);
  if (relu_) ops::ReluForward(s.y, s.y);
}

void ConvBias::Backward(int site, const Tensor& x, const Tensor& dy, const Tensor& dx,
                        const Tensor& workspace, bool accumulate) {
  const Site& s = sites_[site];
  const Tensor g = ViewAs(dy, s.y);
  if (relu_) ops::ReluBackward(s.y, g, g);
  const Tensor dw = accumulate ? dw_site_ : dw_, db = accumulate ? db_site_ : db_;
  ops::ConvBackwardWeight(s.g, x, g, dw, workspace);
  ops::BiasBackwardChannels(g, db);
  if (accumulate) {
    ops::Add(dw_, dw_site_, dw_);
    ops::Add(db_, db_site_, db_);
  }
  if (!dx.empty()) ops::ConvBackwardData(s.g, g, w_, ViewAs(dx, x), workspace);
}

int64_t ConvBias::workspace_elements() const {
  int64_t most = 0;
  for (const Site& s : sites_)
    most = std::max(most, ops::ConvWorkspaceElements(s.g, core::Layout::kNCHW, w_.device()));
  return most;
}

}  // namespace mlperf::layers
