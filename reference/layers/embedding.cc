#include "reference/layers/embedding.h"

#include "reference/kernels/dispatch.h"

namespace mlperf::layers {

void Embedding::Allocate(int64_t rows, int64_t entries, int64_t features, const std::string& name,
                         const ModelArenas& arenas, ParameterRegistry* registry) {
  const Parameter table =
      AddParameter(arenas, registry, {entries, features}, {.name = name + ".weight"});
  table_ = table.value;
  dtable_ = table.grad;
  y_ = arenas.activations->Allocate({rows, features});
}

void Embedding::Forward(const core::Tensor& ids) { ops::EmbeddingForward(ids, table_, y_); }

void Embedding::Backward(const core::Tensor& ids, const core::Tensor& dy, bool accumulate) {
  ops::EmbeddingBackward(ids, dy, dtable_, accumulate);
}

}  // namespace mlperf::layers
