// One BERT pretraining sample in the MLPerf reference's TFRecord schema
// (create_pretraining_data.py, read by run_pretraining.py's input_fn): a
// tf.Example with the int64 features input_ids, input_mask, segment_ids
// [seq_len], masked_lm_positions, masked_lm_ids [max_predictions],
// next_sentence_labels [1] and the float feature masked_lm_weights
// [max_predictions]. Parsed into the dtypes models::Bert reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::datasets::bert {

struct PretrainingShape {
  int64_t seq_len = 512;
  int64_t max_predictions = 76;
  // When > 0, token ids (input_ids, masked_lm_ids) must be below it: an id
  // outside the embedding table would read out of bounds. 0: not checked.
  int64_t vocab_size = 0;
};

// Where one parsed sample goes: its row in each batch array.
struct PretrainingRow {
  int32_t* input_ids;            // [seq_len]
  int32_t* segment_ids;          // [seq_len]
  float* input_mask;             // [seq_len], 0 or 1
  int32_t* masked_lm_positions;  // [max_predictions]
  int32_t* masked_lm_ids;        // [max_predictions]
  float* masked_lm_weights;      // [max_predictions]
  int32_t* next_sentence_label;  // one: 0 = B follows A, 1 = random B
};

// One sample held in its own vectors (generated data, tests).
struct PretrainingExample {
  std::vector<int32_t> input_ids, segment_ids;
  std::vector<float> input_mask;
  std::vector<int32_t> masked_lm_positions, masked_lm_ids;
  std::vector<float> masked_lm_weights;
  int32_t next_sentence_label = 0;

  // Zero-filled vectors of the shape's sizes.
  explicit PretrainingExample(const PretrainingShape& shape = {});
  PretrainingRow row();
};

// Parses a serialized tf.Example into `row`. Every feature must be present
// with its kind and exact length; ids non-negative int32 (below vocab_size
// when given), segments, mask and label 0 or 1, positions in [0, seq_len),
// weights 0 or 1. An error is one line: `where` (file:offset), the feature,
// what was expected.
absl::Status ParsePretrainingExample(std::string_view serialized, const PretrainingShape& shape,
                                     const std::string& where, const PretrainingRow& row);
absl::StatusOr<PretrainingExample> ParsePretrainingExample(std::string_view serialized,
                                                           const PretrainingShape& shape,
                                                           const std::string& where);

// The inverse: a serialized tf.Example with the seven features as the
// reference writes them (int64 lists, masked_lm_weights as floats).
std::string MakePretrainingExample(const PretrainingExample& example);

}  // namespace mlperf::datasets::bert
