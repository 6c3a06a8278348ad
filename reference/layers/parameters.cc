#include "reference/layers/parameters.h"

#include "base/check.h"

namespace mlperf::layers {

Parameter AddParameter(const ModelArenas& arenas, ParameterRegistry* registry, core::Shape shape,
                       Parameter p) {
  if (p.batch_norm || p.bias) p.no_weight_decay = p.no_trust_ratio = true;
  if (arenas.freeze.has_value() && p.trainable) {
    p.trainable = false;
    p.dtype = *arenas.freeze;
  }
  if (p.trainable) {
    MLPERF_CHECK_MSG(p.dtype == core::DType::kF32, "trainable parameters are fp32 (master copies)");
    p.value = arenas.params->AllocateZeroed(shape);
    p.grad = arenas.grads->AllocateZeroed(shape);
  } else {
    MLPERF_CHECK_MSG(arenas.frozen != nullptr, "no frozen arena");
    MLPERF_CHECK_MSG(!p.sharding.sharded(), "frozen parameters are replicated");
    p.value = arenas.frozen->AllocateZeroed(shape, p.dtype);
  }
  MLPERF_CHECK(!p.sharding.sharded() || (shape.rank() > 0 && shape[0] > 0 &&
                                         p.sharding.first_row + shape[0] <= p.sharding.full_rows));
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
