#include "datasets/megatron/gpt_index.h"

#include <cmath>

#include "datasets/megatron/numpy_random.h"
#include "fmt/format.h"

namespace mlperf::megatron {

namespace {

// The exposed ids `epochs` times over, shuffled as one array.
void AppendShuffledEpochs(std::span<const int32_t> exposed, int64_t epochs,
                          NumpyRandomState* random, std::vector<int32_t>* documents) {
  const size_t first = documents->size();
  for (int64_t e = 0; e < epochs; ++e)
    documents->insert(documents->end(), exposed.begin(), exposed.end());
  random->Shuffle(std::span<int32_t>(documents->data() + first, documents->size() - first));
}

// [first, last) shuffled, appended.
void AppendShuffledRange(int64_t first, int64_t last, NumpyRandomState* random,
                         std::vector<int64_t>* order) {
  const size_t start = order->size();
  for (int64_t i = first; i < last; ++i) order->push_back(i);
  random->Shuffle(std::span<int64_t>(order->data() + start, order->size() - start));
}

}  // namespace

absl::StatusOr<GptIndex> BuildGptIndex(std::span<const int32_t> lengths,
                                       std::span<const int32_t> exposed,
                                       const GptIndexOptions& options) {
  const int64_t seq = options.sequence_length, extra = options.add_extra_token ? 1 : 0;
  if (seq < 2) return absl::InvalidArgumentError("the sequence length must be at least 2");
  if (options.num_samples < 0) return absl::InvalidArgumentError("negative sample count");
  GptIndex index;
  for (int32_t id : exposed) {
    if (id < 0 || static_cast<size_t>(id) >= lengths.size())
      return absl::InvalidArgumentError(
          fmt::format("sequence {} is not in the data ({} sequences)", id, lengths.size()));
    index.tokens_per_epoch += lengths[id];
  }
  const int64_t per_epoch = index.tokens_per_epoch;
  if (per_epoch <= 1) return absl::InvalidArgumentError("the split holds fewer than two tokens");
  if (options.num_samples > 0) {
    const int64_t wanted = options.num_samples * seq + extra;
    index.epochs = (wanted + per_epoch - 1) / per_epoch;
  }
  const int64_t epochs = index.epochs;
  int64_t samples_before_final = 0;
  if (epochs > 1) {
    samples_before_final = ((epochs - 1) * per_epoch - extra) / seq;
    const int64_t from_final = options.num_samples - samples_before_final;
    const int64_t per_epoch_samples = (per_epoch - extra) / seq;
    index.separate_final_epoch = from_final < static_cast<int64_t>(0.80 * per_epoch_samples);
  }

  NumpyRandomState random(options.seed);
  index.documents.reserve(static_cast<size_t>(epochs) * exposed.size());
  if (index.separate_final_epoch) {
    AppendShuffledEpochs(exposed, epochs - 1, &random, &index.documents);
    AppendShuffledEpochs(exposed, 1, &random, &index.documents);
  } else {
    AppendShuffledEpochs(exposed, epochs, &random, &index.documents);
  }

  // Walk the documents, cutting a boundary every sequence_length tokens; the
  // boundary token is shared (it is the previous sample's extra label).
  const int64_t total = epochs * per_epoch - extra;
  const int64_t count = options.drop_last_partial
                            ? total / seq
                            : static_cast<int64_t>(std::ceil(static_cast<float>(total) / seq));
  std::vector<int64_t>& s = index.samples;
  s.reserve(2 * (count + 1));
  int64_t position = 0, offset = 0;
  s.push_back(0);
  s.push_back(0);
  const int64_t last = static_cast<int64_t>(index.documents.size()) - 1;
  for (int64_t k = 1; k <= count; ++k) {
    int64_t remaining = seq + extra;
    while (remaining != 0) {
      const int64_t length = lengths[index.documents[position]] - offset;
      remaining -= length;
      if (remaining <= 0) {
        offset += remaining + length - extra;
        remaining = 0;
      } else if (position == last) {
        offset = lengths[index.documents[position]] - extra;  // the padded last sample
        break;
      } else {
        ++position;
        offset = 0;
      }
    }
    s.push_back(position);
    s.push_back(offset);
  }

  const int64_t samples = count;
  index.shuffle.reserve(samples);
  if (index.separate_final_epoch) {
    AppendShuffledRange(0, samples_before_final, &random, &index.shuffle);
    AppendShuffledRange(samples_before_final, samples, &random, &index.shuffle);
  } else {
    AppendShuffledRange(0, samples, &random, &index.shuffle);
  }
  return index;
}

absl::StatusOr<int64_t> ReadGptSample(const IndexedDataset& data, const GptIndex& index,
                                      const GptIndexOptions& options, int64_t i, int64_t pad_id,
                                      int64_t vocab_size, std::span<int64_t> tokens) {
  const int64_t want = options.sequence_length + (options.add_extra_token ? 1 : 0);
  if (i < 0 || i >= index.size())
    return absl::OutOfRangeError(fmt::format("sample {} of {}", i, index.size()));
  if (static_cast<int64_t>(tokens.size()) != want)
    return absl::InvalidArgumentError("the sample buffer has the wrong length");
  const int64_t k = index.shuffle[i];
  const int64_t first = index.samples[2 * k], first_offset = index.samples[2 * k + 1];
  const int64_t last = index.samples[2 * k + 2], last_offset = index.samples[2 * k + 3];
  const int64_t extra = options.add_extra_token ? 1 : 0;
  int64_t filled = 0;
  for (int64_t p = first; p <= last; ++p) {
    const int32_t sequence = index.documents[p];
    const int64_t offset = p == first ? first_offset : 0;
    const int64_t end = p == last ? last_offset + extra : data.sequence_lengths()[sequence];
    const int64_t count = std::min(end - offset, want - filled);
    if (count <= 0) continue;
    if (absl::Status st = data.Read(sequence, offset, count, tokens.data() + filled, vocab_size);
        !st.ok())
      return st;
    filled += count;
  }
  for (int64_t t = filled; t < want; ++t) tokens[t] = pad_id;
  return filled;
}

int64_t RankSample(int64_t step, int64_t micro, int64_t j, int64_t rank, int64_t ranks,
                   int64_t micro_batch, int64_t global_batch) {
  return step * global_batch + (micro * ranks + rank) * micro_batch + j;
}

}  // namespace mlperf::megatron
