// What the decoder LLM benchmarks (llama31_8b, llama2_70b_lora) share: the
// memory plan of a full model before anything is allocated, and the
// distributed optimizer over their ranks.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "benchmarks/plan.h"
#include "reference/dist/communicator.h"
#include "reference/models/decoder.h"
#include "reference/optim/distributed_optimizer.h"

namespace mlperf::benchmarks {

// What this run_closed runs (the model split over plan.tensor_parallel
// processes, or whole on each; the optimizer state split over the
// data-parallel ranks on the CPU, whole on each GPU) against a process's
// memory `limit` (its GPU's, or its share of the host's): as it is, else
// (or with member.recompute set) recomputing activations (which sets
// member.recompute), the rank's batch split into micro-batches where that
// makes it fit; else ResourceExhausted naming a layout that would fit.
absl::Status FitDecoderMemory(std::string_view benchmark, models::DecoderConfig& member,
                              int world_size, int64_t limit, RunPlan& plan);

// Over several data-parallel processes on the CPU, or for a tensor-parallel
// decoder: the distributed optimizer (the state split over `data_comm`'s
// ranks, each shard stepped by `shard`, the gradients clipped at global
// norm `clip` summed over the tensor-parallel ranks too). Null where the
// benchmark's own optimizer runs whole: one process, or GPUs (the NCCL path
// of the distributed optimizer has not run).
std::unique_ptr<optim::Optimizer> DistributedDecoderOptimizer(const models::Model& model,
                                                              dist::Communicator& data_comm,
                                                              bool gpus, float clip,
                                                              optim::InnerOptimizerFactory shard);

}  // namespace mlperf::benchmarks
