#include "reference/layers/parameters.h"

#include "base/check.h"

namespace mlperf::layers {

Parameter AddParameter(const ModelArenas& arenas, ParameterRegistry* registry, core::Shape shape,
                       Parameter p) {
  p.value = arenas.params->AllocateZeroed(shape);
  p.grad = arenas.grads->AllocateZeroed(shape);
  registry->parameters.push_back(p);
  return p;
}

core::Shape ActivationShape(core::Layout layout, int64_t n, int64_t c, int64_t h, int64_t w) {
  return layout == core::Layout::kNHWC ? core::Shape{n, h, w, c} : core::Shape{n, c, h, w};
}

core::Tensor ViewAs(const core::Tensor& buffer, const core::Tensor& like) {
  MLPERF_CHECK(buffer.bytes() >= like.numel() * core::DTypeSize(like.dtype()));
  return core::Tensor(buffer.data(), like.shape(), like.dtype(), like.device(), like.layout());
}

}  // namespace mlperf::layers
