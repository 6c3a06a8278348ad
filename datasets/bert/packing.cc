#include "datasets/bert/packing.h"

#include <algorithm>
#include <numeric>
#include <set>

#include "base/check.h"

namespace mlperf::datasets::bert {

SampleSize SizeOf(const float* input_mask, const float* masked_lm_weights,
                  const PretrainingShape& shape) {
  SampleSize size;
  for (int64_t t = 0; t < shape.seq_len; ++t) size.tokens += input_mask[t] != 0.0f;
  for (int64_t m = 0; m < shape.max_predictions; ++m)
    size.predictions += masked_lm_weights[m] != 0.0f;
  return size;
}

std::span<const int32_t> Packs::row(int64_t r) const {
  const int32_t* first = members.data() + r * max_sequences;
  int64_t n = 0;
  while (n < max_sequences && first[n] >= 0) ++n;
  return {first, static_cast<size_t>(n)};
}

int64_t Packs::samples() const {
  return std::count_if(members.begin(), members.end(), [](int32_t m) { return m >= 0; });
}

Packs PackSamples(std::span<const SampleSize> sizes, const PackingLimits& limits) {
  MLPERF_CHECK(limits.seq_len > 0 && limits.max_sequences > 0 && limits.max_predictions >= 0);
  std::vector<int32_t> order(sizes.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return sizes[a].tokens > sizes[b].tokens; });
  Packs packs{.max_sequences = limits.max_sequences};
  std::vector<int64_t> room, slots, used;  // per row: tokens, masked-LM slots left; samples
  // Rows that may take another sample, by the tokens they have left.
  std::vector<std::set<int64_t>> open(static_cast<size_t>(limits.seq_len) + 1);
  for (const int32_t i : order) {
    const SampleSize& s = sizes[i];
    MLPERF_CHECK_MSG(s.tokens > 0 && s.tokens <= limits.seq_len && s.predictions >= 0 &&
                         s.predictions <= limits.max_predictions,
                     "a BERT sample does not fit one packed row");
    int64_t chosen = -1;
    for (int64_t left = s.tokens; left <= limits.seq_len && chosen < 0; ++left) {
      for (const int64_t r : open[left]) {
        if (slots[r] >= s.predictions) {
          chosen = r;
          break;
        }
      }
    }
    if (chosen < 0) {
      chosen = static_cast<int64_t>(room.size());
      packs.members.resize(packs.members.size() + static_cast<size_t>(limits.max_sequences), -1);
      room.push_back(limits.seq_len);
      slots.push_back(limits.max_predictions);
      used.push_back(0);
    } else {
      open[room[chosen]].erase(chosen);
    }
    packs.members[chosen * limits.max_sequences + used[chosen]++] = i;
    room[chosen] -= s.tokens;
    slots[chosen] -= s.predictions;
    if (used[chosen] < limits.max_sequences && room[chosen] > 0) open[room[chosen]].insert(chosen);
  }
  return packs;
}

PackedBertBatch::PackedBertBatch(int64_t rows_in, const PackingLimits& limits)
    : rows(rows_in),
      seq_len(limits.seq_len),
      max_predictions(limits.max_predictions),
      max_sequences(limits.max_sequences) {
  const auto tokens = static_cast<size_t>(rows * seq_len);
  const auto predictions = static_cast<size_t>(rows * max_predictions);
  const auto sequences = static_cast<size_t>(rows * max_sequences);
  input_ids.assign(tokens, 0);
  segment_ids.assign(tokens, 0);
  positions.assign(tokens, 0);
  input_mask.assign(tokens, 0.0f);
  masked_lm_positions.assign(predictions, 0);
  masked_lm_ids.assign(predictions, 0);
  masked_lm_weights.assign(predictions, 0.0f);
  next_sentence_positions.assign(sequences, 0);
  next_sentence_labels.assign(sequences, 0);
  next_sentence_weights.assign(sequences, 0.0f);
}

void PackedBertBatch::Fill(int64_t row, std::span<const PretrainingRow> samples,
                           const PretrainingShape& shape) {
  MLPERF_CHECK(row >= 0 && row < rows && static_cast<int64_t>(samples.size()) <= max_sequences);
  MLPERF_CHECK_MSG(next_sentence_weights[row * max_sequences] == 0.0f, "packed row filled twice");
  int64_t start = 0, slot = 0;
  for (size_t q = 0; q < samples.size(); ++q) {
    const PretrainingRow& s = samples[q];
    const SampleSize size = SizeOf(s, shape);
    MLPERF_CHECK_MSG(start + size.tokens <= seq_len && slot + size.predictions <= max_predictions,
                     "samples overflow a packed row");
    for (int64_t t = 0; t < size.tokens; ++t) {
      const int64_t at = row * seq_len + start + t;
      input_ids[at] = s.input_ids[t];
      segment_ids[at] = s.segment_ids[t];
      positions[at] = static_cast<int32_t>(t);
      input_mask[at] = static_cast<float>(q + 1);
    }
    for (int64_t m = 0; m < shape.max_predictions; ++m) {
      if (s.masked_lm_weights[m] == 0.0f) continue;
      const int64_t at = row * max_predictions + slot++;
      masked_lm_positions[at] = static_cast<int32_t>(start + s.masked_lm_positions[m]);
      masked_lm_ids[at] = s.masked_lm_ids[m];
      masked_lm_weights[at] = s.masked_lm_weights[m];
    }
    const int64_t at = row * max_sequences + static_cast<int64_t>(q);
    next_sentence_positions[at] = static_cast<int32_t>(start);
    next_sentence_labels[at] = *s.next_sentence_label;
    next_sentence_weights[at] = 1.0f;
    start += size.tokens;
  }
}

int64_t PackedBertBatch::sequences() const {
  int64_t n = 0;
  for (const float w : next_sentence_weights) n += w != 0.0f;
  return n;
}

}  // namespace mlperf::datasets::bert
