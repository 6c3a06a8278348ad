// What the decoder LLM benchmarks (llama31_8b, gpt3, llama2_70b_lora)
// share: the memory plan of a full model before anything is allocated, the
// distributed optimizer over their ranks, and a demonstration's
// pre-training of its starting checkpoint.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "benchmarks/benchmark.h"
#include "benchmarks/plan.h"
#include "benchmarks/rcp_recipes.h"
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

// --tensor_parallel against the model: its key/value heads, SwiGLU width
// and vocabulary must split over plan.tensor_parallel ranks (a usage
// error otherwise).
absl::Status CheckTensorSplit(const models::DecoderConfig& member, const RunPlan& plan);

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

// A demonstration's starting checkpoint, untimed, on this process alone:
// `model` trained `steps` steps on `data`'s batches by AdamW (0.9/0.95,
// weight decay 0.1, clipped at global norm 1.0) under a schedule of its own
// (10 warm-up steps, then a cosine from `lr` to a tenth).
absl::Status PretrainDecoder(models::Decoder& model, DataPipeline& data, int64_t steps, double lr);

}  // namespace mlperf::benchmarks
