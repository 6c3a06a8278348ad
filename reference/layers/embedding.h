// A learned embedding table [entries, features]: rows of it looked up by
// int32 ids (tokens, positions, token types), on either backend.
#pragma once

#include <cstdint>
#include <string>

#include "reference/core/tensor.h"
#include "reference/layers/parameters.h"

namespace mlperf::layers {

class Embedding {
 public:
  // rows: ids per call. Registers name.weight.
  void Allocate(int64_t rows, int64_t entries, int64_t features, const std::string& name,
                const ModelArenas& arenas, ParameterRegistry* registry);
  void Forward(const core::Tensor& ids);
  // The table's gradient: dy's rows summed at their ids, overwriting it or,
  // with accumulate, added (a table shared with a tied output layer).
  void Backward(const core::Tensor& ids, const core::Tensor& dy, bool accumulate = false);

  const core::Tensor& output() const { return y_; }
  const core::Tensor& table() const { return table_; }
  const core::Tensor& table_grad() const { return dtable_; }

 private:
  core::Tensor table_, dtable_, y_;
};

}  // namespace mlperf::layers
