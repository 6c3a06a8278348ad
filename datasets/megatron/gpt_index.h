// The sample order of Megatron's GPTDataset (megatron-core, which NeMo's
// pre-training data module uses for the Llama 3.1 references): the exposed
// sequences are concatenated, epoch after epoch, into fixed-length samples
// that cross document boundaries, then the samples are shuffled.
//
//   document index: the exposed sequence ids repeated for every epoch and
//     shuffled by NumPy's RandomState(seed) (the last epoch shuffled on its
//     own when it holds under 80% of an epoch's samples);
//   sample index: for each sample boundary, a position in the document index
//     and a token offset in that document; a sample holds sequence_length
//     tokens plus one (the shifted labels' last), so consecutive samples
//     share one token;
//   shuffle index: the samples' order, drawn from the same generator after
//     the document index (the final epoch's samples again kept apart).
//
// Built here draw for draw, so a seed gives the reference's samples in the
// reference's order (tests/datasets compare with a NumPy transcription).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/megatron/indexed_dataset.h"

namespace mlperf::megatron {

struct GptIndexOptions {
  int64_t sequence_length = 8192;
  uint32_t seed = 1234;
  // The samples the run asks for (global batch x steps); the epochs are as
  // many as cover them. 0: one epoch (Megatron's num_samples None).
  int64_t num_samples = 0;
  // Samples of sequence_length + 1 tokens (Megatron's default).
  bool add_extra_token = true;
  // Drop the last partial sample (always for training; Megatron's
  // validation split may keep it, padded).
  bool drop_last_partial = true;
};

struct GptIndex {
  std::vector<int32_t> documents;  // sequence ids, epoch after epoch, shuffled
  std::vector<int64_t> samples;    // (size() + 1) x 2: document position, token offset
  std::vector<int64_t> shuffle;    // size() sample numbers
  int64_t epochs = 1;
  int64_t tokens_per_epoch = 0;
  bool separate_final_epoch = false;

  int64_t size() const { return static_cast<int64_t>(shuffle.size()); }
};

// `lengths`: every sequence's length in tokens; `exposed`: the sequence ids
// of the split, in order. Errors: fewer than two tokens, a sequence length
// below 2, ids outside `lengths`.
absl::StatusOr<GptIndex> BuildGptIndex(std::span<const int32_t> lengths,
                                       std::span<const int32_t> exposed,
                                       const GptIndexOptions& options);

// The tokens of sample `i` (after the shuffle): sequence_length + 1 ids with
// add_extra_token, padded with `pad_id` when the last partial sample is
// short. Returns how many tokens came from the data.
absl::StatusOr<int64_t> ReadGptSample(const IndexedDataset& data, const GptIndex& index,
                                      const GptIndexOptions& options, int64_t i, int64_t pad_id,
                                      int64_t vocab_size, std::span<int64_t> tokens);

// Which sample (a position in the shuffled order) data-parallel rank `rank`
// of `ranks` reads as sample `j` of micro-batch `micro` of optimizer step
// `step`, as Megatron's pre-training sampler deals them: the stream of
// samples in chunks of micro_batch x ranks, rank r taking the r-th slice of
// each chunk, global_batch / (micro_batch x ranks) chunks per step. Every
// sample of a step goes to exactly one rank.
int64_t RankSample(int64_t step, int64_t micro, int64_t j, int64_t rank, int64_t ranks,
                   int64_t micro_batch, int64_t global_batch);

}  // namespace mlperf::megatron
