// Batches of the converted GovReport arrays (datasets/govreport) for one
// rank. Training: every epoch a seeded permutation of the samples, the
// epochs back to back, each optimizer step the next global batch of them,
// each data-parallel rank its contiguous share (so every sample is trained
// once per epoch, whatever the batch). Evaluation: every sample of the
// split once, each rank its contiguous share, the last batch padded and
// every rank giving as many batches. A sample shorter than the model's
// sequence is padded at the right with labels that do not count.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "benchmarks/benchmark.h"

namespace mlperf::benchmarks::llama2_70b_lora {

struct SplitFiles {
  std::filesystem::path dir;
  std::string split;  // "train", "validation", or the demonstration's "pretrain"
  int64_t seq_len = 0, vocab_size = 0;
};

absl::StatusOr<std::unique_ptr<DataPipeline>> OpenGovReportPipeline(const SplitFiles& files,
                                                                    bool eval, uint64_t seed,
                                                                    int rank, const RunPlan& plan);

// Before any model: the split there and whole, no sample longer than the
// sequence; its sample count.
absl::StatusOr<int64_t> CheckGovReportSplit(const SplitFiles& files);

}  // namespace mlperf::benchmarks::llama2_70b_lora
