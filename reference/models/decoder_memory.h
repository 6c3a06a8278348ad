// The decoder's memory plan: the bytes per rank a layout of tensor-parallel
// (tp) and data-parallel (dp) ranks needs for weights, gradients, AdamW's
// state and activations, from this implementation's own arenas (measured
// without allocating them, Decoder::Measure), before anything is allocated;
// and the first layout of a number of ranks that fits their memory.
//
//   weights, gradients: fp32, this rank's slice of every parameter;
//   optimizer: AdamW's two fp32 moments per parameter, divided over the dp
//     ranks with the distributed optimizer;
//   activations: what a training step keeps for the backward at the micro
//     batch; with recomputation, each layer's output plus one layer's
//     activations (the rest rebuilt layer by layer in the backward).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "reference/models/decoder.h"

namespace mlperf::models {

struct DecoderLayout {
  int tp = 1, dp = 1;
  int64_t micro_batch = 1;
  bool distributed_optimizer = true;
  bool recompute = false;
};

// weights: the trainable ones (fp32); frozen: a LoRA base in its own type.
struct DecoderMemory {
  int64_t weights = 0, frozen = 0, gradients = 0, optimizer = 0, activations = 0;
  int64_t total() const { return weights + frozen + gradients + optimizer + activations; }
};

DecoderMemory PlanDecoderMemory(const DecoderConfig& config, const DecoderLayout& layout);

// The layouts of `ranks` ranks in the order they are tried: tensor
// parallelism as small as the heads, SwiGLU width and vocabulary allow,
// first without then with recomputation; the rest data parallel with the
// distributed optimizer.
std::vector<DecoderLayout> CandidateLayouts(const DecoderConfig& config, int ranks,
                                            int64_t micro_batch);

struct DecoderPlan {
  DecoderLayout layout;
  DecoderMemory memory;
  bool fits = false;
};

// Every candidate with its memory, and the first that fits `limit_bytes` per
// rank (ResourceExhausted naming the smallest need when none does).
absl::StatusOr<DecoderPlan> ChooseDecoderLayout(const DecoderConfig& config, int ranks,
                                                int64_t micro_batch, int64_t limit_bytes,
                                                std::vector<DecoderPlan>* tried = nullptr);

// "tp 2 x dp 4, recompute: weights 15.0 GiB, gradients 15.0 GiB, ..."
std::string DescribeDecoderPlan(const DecoderPlan& plan);

}  // namespace mlperf::models
