// Sequence packing for BERT pretraining, as NVIDIA's MLPerf BERT packs the
// reference's samples: up to three samples share one row of seq_len tokens,
// each keeping its own tokens, segments and masked-LM slots, its positions
// restarting at 0 and its next-sentence slot at its first token; in the
// row's input_mask each token carries its sample's number (1, 2, 3; 0
// padding) so that models::Bert (BertConfig::packed_sequences) lets it
// attend only to its own sample. A packed batch trains exactly what its
// samples unpacked train (tests/bert/bert_packing_test).
//
// Which samples share a row: best-fit decreasing (Krell et al., "Efficient
// Sequence Packing without Cross-contamination", 2021, the shortest-pack-
// first idea taken one sample at a time): samples by decreasing length
// (ties in their order), each into the open row with the least room that
// still takes its tokens and masked-LM slots and has fewer than the limit
// of samples (ties: the earliest row), else into a new row. Deterministic.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "datasets/bert/pretraining_example.h"

namespace mlperf::datasets::bert {

struct PackingLimits {
  int64_t seq_len = 512;
  int64_t max_predictions = 76;  // masked-LM slots of a row
  int64_t max_sequences = 3;     // NVIDIA's
};

// What a sample needs in a row: its tokens (input_mask's ones, which lead
// the row) and its masked-LM slots in use (weight 1, leading theirs).
struct SampleSize {
  int32_t tokens = 0;
  int32_t predictions = 0;
};
SampleSize SizeOf(const float* input_mask, const float* masked_lm_weights,
                  const PretrainingShape& shape);
inline SampleSize SizeOf(const PretrainingRow& unpacked, const PretrainingShape& shape) {
  return SizeOf(unpacked.input_mask, unpacked.masked_lm_weights, shape);
}

// The rows, in the order they were opened: row r's samples (indices into
// the sizes, longest first) at members[r * max_sequences + i], -1 after
// them. Every sample lands in exactly one row.
struct Packs {
  int64_t max_sequences = 0;
  std::vector<int32_t> members;
  int64_t rows() const {
    return max_sequences > 0 ? static_cast<int64_t>(members.size()) / max_sequences : 0;
  }
  std::span<const int32_t> row(int64_t r) const;  // its samples, without the -1s
  int64_t samples() const;                        // over all rows
};
Packs PackSamples(std::span<const SampleSize> sizes, const PackingLimits& limits);

// A batch of packed rows in models::Bert's packed input order
// (kBertPackedInputs), owning its arrays.
struct PackedBertBatch {
  int64_t rows = 0, seq_len = 0, max_predictions = 0, max_sequences = 0;
  std::vector<int32_t> input_ids, segment_ids, positions;   // [rows, seq_len]
  std::vector<float> input_mask;                            // [rows, seq_len]: 0, 1, 2, 3
  std::vector<int32_t> masked_lm_positions, masked_lm_ids;  // [rows, max_predictions]
  std::vector<float> masked_lm_weights;
  std::vector<int32_t> next_sentence_positions, next_sentence_labels;  // [rows, max_sequences]
  std::vector<float> next_sentence_weights;

  // Zero-filled (every row empty).
  PackedBertBatch(int64_t rows, const PackingLimits& limits);
  // Writes `samples` (unpacked, in this order) into row `row`, which must be
  // empty; they must fit the limits (PackSamples' rows do).
  void Fill(int64_t row, std::span<const PretrainingRow> samples, const PretrainingShape& shape);
  int64_t sequences() const;  // samples over all rows
};

}  // namespace mlperf::datasets::bert
