// The parameter registry every model fills while it lays out its arenas:
// named parameter tensors with their gradients, named buffers (running
// statistics), and the arenas themselves. Layers carve what they need in
// Allocate; the model calls its layout twice (measuring arenas, then real
// ones), so a training step allocates nothing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/tensor.h"

namespace mlperf::layers {

// Parameters and gradients share one layout; buffers hold running
// statistics; activations hold everything a step writes and reads back.
struct ModelArenas {
  core::Arena* params;
  core::Arena* grads;
  core::Arena* buffers;
  core::Arena* activations;
};

struct Parameter {
  std::string name;  // the PyTorch state_dict name
  core::Tensor value;
  core::Tensor grad;
  int64_t fan_in = 0;       // > 0 for convolution kernels (He init)
  bool batch_norm = false;  // a normalisation's scale or shift
  bool bias = false;
};

struct NamedBuffer {
  std::string name;
  core::Tensor value;
};

// Everything the layers registered, in state_dict order.
struct ParameterRegistry {
  std::vector<Parameter> parameters;
  std::vector<NamedBuffer> buffers;
  std::vector<std::string> batch_norms;  // prefixes, for num_batches_tracked
};

// Carves a parameter of `shape` and its gradient (zeroed, at the same place in
// their arenas) and registers them with the name and kind given in `p`.
Parameter AddParameter(const ModelArenas& arenas, ParameterRegistry* registry, core::Shape shape,
                       Parameter p);

// Memory-order shape of an activation with logical sizes n, c, h, w.
core::Shape ActivationShape(core::Layout layout, int64_t n, int64_t c, int64_t h, int64_t w);

// `like`'s shape, dtype and layout over the memory of `buffer` (a flat scratch
// tensor at least as large).
core::Tensor ViewAs(const core::Tensor& buffer, const core::Tensor& like);

}  // namespace mlperf::layers
