// The distributed optimizer (Megatron's, ZeRO stage 1): the optimizer state
// split over the data-parallel ranks. Each rank receives its shard of the
// gradients by a reduce-scatter (summed, then averaged), clips them by the
// global norm (the shards' squared norms summed over the ranks), steps its
// shard of the fp32 weights with the inner optimizer, whose state covers
// the shard only, and all-gathers the updated weights. The gradients it is
// given are each rank's own, not yet reduced: the trainer skips its
// all-reduce for it (ReducesGradients).
//
// Its state is each rank's shard (not per parameter): checkpoints of it are
// not written yet.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "reference/kernels/optimizer_params.h"
#include "reference/optim/optimizer.h"

namespace mlperf::dist {
class Communicator;
}

namespace mlperf::optim {

// Under tensor parallelism the global norm is the tensor-parallel ranks'
// together: each rank's squares (its slices) summed over `comm` too, with
// the parameters every one of them holds whole (norm scales) counted on
// tensor rank 0 only.
struct TensorParallelNorm {
  dist::Communicator* comm = nullptr;   // null: no tensor parallelism
  std::vector<TensorSlice> replicated;  // in the parameter arena
};

using InnerOptimizerFactory =
    std::function<std::unique_ptr<Optimizer>(std::vector<TensorSlice> shard_slices)>;

class DistributedOptimizer final : public Optimizer {
 public:
  // `make` builds the inner optimizer (without clipping) over the shard's
  // slices; max_grad_norm > 0 clips as clip_grad_norm_ does.
  DistributedOptimizer(dist::Communicator& comm, std::vector<TensorSlice> slices,
                       float max_grad_norm, const InnerOptimizerFactory& make,
                       TensorParallelNorm tensor = {});
  void Allocate(core::Arena& arena, int64_t count) override;
  std::vector<StateTensor> State() const override;
  void Step(const StepArgs& args) override;
  bool ReducesGradients() const override { return true; }

  // This rank's elements [begin, end) of the parameter arena.
  int64_t shard_begin() const { return begin_; }
  int64_t shard_end() const { return end_; }

 private:
  dist::Communicator& comm_;
  std::vector<TensorSlice> slices_;
  float max_grad_norm_;
  InnerOptimizerFactory factory_;
  std::unique_ptr<Optimizer> inner_;
  int64_t chunk_ = 0, begin_ = 0, end_ = 0;
  // The padded send buffer of the reduce-scatter (and the all-gather's
  // receive buffer), this rank's gradient shard, its weight shard.
  core::Tensor padded_, grad_shard_, weight_shard_;
  TensorParallelNorm tensor_;
  // The gradient shard on the host for the clip's norm (kept: no allocation
  // in a step), and which of its elements count (0 for replicated ones off
  // tensor rank 0; empty: all).
  std::vector<float> host_grads_;
  std::vector<uint8_t> counted_;
};

// The slices of `slices` inside [begin, end), their offsets from begin.
std::vector<TensorSlice> ShardSlices(const std::vector<TensorSlice>& slices, int64_t begin,
                                     int64_t end);

}  // namespace mlperf::optim
