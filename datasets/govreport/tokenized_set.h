// The tokenized SCROLLS GovReport set the Llama 2 70B LoRA reference reads
// (Parquet rows of input_ids, attention_mask and labels, each sample one
// report and its summary, the report's tokens masked in labels with -100),
// as scripts/convert_govreport.py converts it once, since no Parquet reader
// is packaged for the build: per split three NumPy arrays,
//
//   <split>_input_ids.npy  int32 [tokens]       the samples' tokens, back to back
//   <split>_labels.npy     int32 [tokens]       their labels as transformers
//                                               takes them (the token, or -100)
//   <split>_offsets.npy    int64 [samples + 1]  where each sample starts
//
// the padding the attention mask excludes dropped (right padding: with
// causal attention it changes nothing before it). The arrays are mapped,
// never read whole; their shapes and offsets are checked on opening.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/mapped_file.h"

namespace mlperf::govreport {

// transformers' ignored label.
inline constexpr int32_t kIgnored = -100;

class TokenizedSet {
 public:
  // `split`: "train" or "validation". Errors name the file.
  static absl::StatusOr<std::unique_ptr<TokenizedSet>> Open(const std::filesystem::path& dir,
                                                            std::string_view split);

  int64_t samples() const { return static_cast<int64_t>(offsets_.size()) - 1; }
  int64_t length(int64_t i) const { return offsets_[i + 1] - offsets_[i]; }
  int64_t longest() const { return longest_; }

  // Sample i as a decoder reads it in `seq_len` positions: its tokens, then
  // zeros; the label of a position is the next position's transformers
  // label (its causal shift), kIgnored past the sample's end. An id outside
  // [0, vocab_size), a label neither kIgnored nor an id, or a sample longer
  // than seq_len is an error naming the file and the sample.
  absl::Status Read(int64_t i, int64_t seq_len, int64_t vocab_size, int32_t* tokens,
                    int32_t* labels) const;

 private:
  TokenizedSet() = default;

  std::string name_;  // <dir>/<split>_, for errors
  std::unique_ptr<datasets::MappedFile> ids_file_, labels_file_;
  const int32_t* ids_ = nullptr;
  const int32_t* labels_ = nullptr;
  std::vector<int64_t> offsets_;
  int64_t longest_ = 0;
};

// One sample as the writer takes it: equal lengths.
struct Sample {
  std::vector<int32_t> input_ids, labels;
};

// Writes a split's three arrays as the conversion does (np.save's bytes,
// each file atomically; the offsets last, so a split is complete once they
// are there).
absl::Status WriteTokenizedSet(const std::filesystem::path& dir, std::string_view split,
                               std::span<const Sample> samples);

}  // namespace mlperf::govreport
