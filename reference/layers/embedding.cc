#include "reference/layers/embedding.h"

#include "reference/kernels/dispatch.h"

namespace mlperf::layers {

void Embedding::Allocate(int64_t rows, int64_t entries, int64_t features, const std::string& name,
                         const ModelArenas& arenas, ParameterRegistry* registry) {
  table_ = arenas.params->AllocateZeroed({entries, features});
  dtable_ = arenas.grads->AllocateZeroed({entries, features});
  registry->parameters.push_back({.name = name + ".weight", .value = table_, .grad = dtable_});
  y_ = arenas.activations->Allocate({rows, features});
}

void Embedding::Forward(const core::Tensor& ids) { ops::EmbeddingForward(ids, table_, y_); }

void Embedding::Backward(const core::Tensor& ids, const core::Tensor& dy) {
  ops::EmbeddingBackward(ids, dy, dtable_);
}

}  // namespace mlperf::layers
