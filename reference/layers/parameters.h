// The parameter registry every model fills while it lays out its arenas:
// named parameter tensors with their gradients, named buffers (running
// statistics), and the arenas themselves. Layers carve what they need in
// Allocate; the model calls its layout twice (measuring arenas, then real
// ones), so a training step allocates nothing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "reference/core/arena.h"
#include "reference/core/tensor.h"

namespace mlperf::layers {

// Trainable parameters and their gradients share one layout (fp32);
// frozen parameters have no gradient and a storage type of their own;
// buffers hold running statistics; activations hold everything a step
// writes and reads back.
struct ModelArenas {
  core::Arena* params;
  core::Arena* grads;
  core::Arena* buffers;
  core::Arena* activations;
  core::Arena* frozen = nullptr;
  // Set: every parameter added through these arenas is frozen and stored in
  // this type (a base model under LoRA), whatever its layer asks for.
  std::optional<core::DType> freeze;
};

// A parameter split by its first dimension across the ranks: this rank holds
// rows [first_row, first_row + rows of the value) of full_rows (DLRM's
// embedding tables, tensor-parallel layers). Such a parameter is not
// all-reduced: the model exchanges what its shard's rows need in its passes
// and leaves each shard's gradient averaged over the ranks; checkpoints hold
// it gathered whole.
struct Sharding {
  int64_t full_rows = 0;  // 0: replicated on every rank
  int64_t first_row = 0;
  bool sharded() const { return full_rows > 0; }
};

struct Parameter {
  std::string name;  // the PyTorch state_dict name
  core::Tensor value;
  core::Tensor grad;        // empty for a frozen parameter
  int64_t fan_in = 0;       // > 0 for convolution kernels (He init)
  bool batch_norm = false;  // a normalisation's scale or shift
  bool bias = false;
  // What the trainer and the optimizers read. A normalisation's scale and
  // shift and a bias get neither weight decay nor a trust ratio (AddParameter
  // sets both); a model may set either alone.
  bool no_weight_decay = false;
  bool no_trust_ratio = false;
  // Frozen: no gradient memory, no optimizer state, no all-reduce, and the
  // value stored in `dtype` (a bf16 base under LoRA).
  bool trainable = true;
  core::DType dtype = core::DType::kF32;
  Sharding sharding;
};

struct NamedBuffer {
  std::string name;
  core::Tensor value;
  Sharding sharding;  // a shard of DLRM's embedding tables (possibly 0 rows)
};

// Everything the layers registered, in state_dict order.
struct ParameterRegistry {
  std::vector<Parameter> parameters;
  std::vector<NamedBuffer> buffers;
  std::vector<std::string> batch_norms;  // prefixes, for num_batches_tracked
  // The FP8 linear layers' scaling states (also among the buffers), which
  // the trainer updates after each step (kernels/ops/fp8.h).
  std::vector<core::Tensor> fp8_scaling;
};

// Carves a parameter of `shape` (this rank's shard of a sharded one) and its
// gradient (zeroed, at the same place in their arenas), or a frozen one in
// its dtype from the frozen arena, and registers it with the name and
// properties given in `p`.
Parameter AddParameter(const ModelArenas& arenas, ParameterRegistry* registry, core::Shape shape,
                       Parameter p);

// Memory-order shape of an activation with logical sizes n, c, h, w.
core::Shape ActivationShape(core::Layout layout, int64_t n, int64_t c, int64_t h, int64_t w);

// `like`'s shape, dtype and layout over the memory of `buffer` (a flat scratch
// tensor at least as large).
core::Tensor ViewAs(const core::Tensor& buffer, const core::Tensor& like);

}  // namespace mlperf::layers
