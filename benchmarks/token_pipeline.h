// Batches of Megatron token files (.bin/.idx) in GPTDataset's sample order,
// for the decoder LLM benchmarks. Training: the samples the schedule can
// reach, seeded with the run's seed as the references seed their data, each
// optimizer step's samples dealt to the data-parallel ranks as Megatron's
// pre-training sampler deals them. Evaluation: the first `eval_count`
// samples of the validation order (one epoch, the same seed), each rank its
// contiguous share, the last batch padded and every rank giving as many
// batches. A sample of sequence_length + 1 tokens gives the inputs (all but
// the last) and the labels (all but the first).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "benchmarks/benchmark.h"
#include "datasets/megatron/generated.h"

namespace mlperf::benchmarks {

struct TokenData {
  std::string prefix;  // the files' path without .bin/.idx
  int64_t sequence_length = 0;
  int64_t vocab_size = 0;
  int64_t eval_count = 0;  // evaluation samples read (an evaluation pipeline)
};

absl::StatusOr<std::unique_ptr<DataPipeline>> OpenTokenPipeline(const TokenData& data, Split split,
                                                                uint64_t seed, int rank,
                                                                const RunPlan& plan);

// A demonstration's generated language written as the training and the
// validation token files (their folders made first).
absl::Status WriteGeneratedTokenFiles(
    const TokenData& train, const megatron::GeneratedLanguageOptions& train_language,
    const TokenData& validation, const megatron::GeneratedLanguageOptions& validation_language);

// Before any model: both files there and whole, the training set holding a
// sample, the validation set `eval_count` of them. Errors name the file.
absl::Status CheckTokenFiles(const TokenData& train, const TokenData& validation);

}  // namespace mlperf::benchmarks
