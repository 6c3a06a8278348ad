// The embedded demonstration's BERT data: a generated language with
// learnable structure, written as real TFRecord shards in the reference's
// schema (part-0000k-of-0000n and eval_10k, pretraining_example.h).
//
// The language. Ids 0-3 are [PAD], [CLS], [SEP], [MASK]; the other
// vocab_size - 4 ids are symbols, paired off by a seed-fixed involution P
// (P(P(a)) = a, P(a) != a). A sample is [CLS] A [SEP] B [SEP] and padding,
// segment 0 for [CLS] A [SEP], 1 for B [SEP]. Sentence A repeats one
// uniform symbol a; sentence B repeats P(a) when it is A's actual next
// sentence (label 0, half the samples), else any other symbol (label 1). So
// a masked token is recoverable from the visible tokens of its own sentence
// (or, in B, through P from A), and the label from the two themes. Lengths
// vary: the sample's symbols are uniform in [max(6, L / 2), L], L =
// seq_len - 3, split at a uniform point leaving each sentence at least 3.
// This is deliberately easy: the demonstration's small BERT (2 layers,
// hidden 64) must go from chance (1 / symbols) to masked-LM accuracy 0.72
// within a few thousand samples (tests/datasets/bert_generated_learning_test).
// Positional structure (e.g. alternating pairs a P(a)) proved too slow to
// learn at that budget.
//
// Masking as the reference's create_pretraining_data.py: of the
// non-special tokens, min(max_predictions, max(1, round(0.15 * tokens)))
// chosen uniformly (tokens counts [CLS] and [SEP] too); each becomes [MASK]
// with p 0.8, stays with p 0.1, else a uniform random symbol (the reference
// draws from its whole vocabulary; here only symbols, so a random
// replacement is never a special token). Positions sorted; unused slots are
// position 0, id 0, weight 0.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "datasets/bert/pretraining_example.h"

namespace mlperf::datasets::bert {

inline constexpr int32_t kPadId = 0, kClsId = 1, kSepId = 2, kMaskId = 3;
inline constexpr int32_t kFirstSymbolId = 4;

struct GeneratedBertOptions {
  int64_t vocab_size = 64;  // including the four special ids; symbols even in number
  int64_t seq_len = 32;
  int64_t max_predictions = 5;
  int64_t train_samples = 20000;
  int train_shards = 4;
  int64_t eval_samples = 2000;
  uint64_t seed = 1;  // fixes the language (P) and every sample
  // The fewest symbols a sample holds (at least 6); 0: (seq_len - 3) / 2,
  // as above (samples of under half a row, for packing, need fewer).
  int64_t min_symbols = 0;

  // A folder name that changes with every option (the cache key).
  std::string Name() const;
  PretrainingShape shape() const { return {seq_len, max_predictions, vocab_size}; }
};

// The language's pairing P, indexed by id (-1 for the special ids).
struct GeneratedLanguage {
  std::vector<int32_t> partner;
};
GeneratedLanguage MakeGeneratedLanguage(const GeneratedBertOptions& options);

// Sample `index` of the training (train) or evaluation split.
PretrainingExample GenerateBertSample(const GeneratedBertOptions& options,
                                      const GeneratedLanguage& language, bool train, int64_t index);

// Writes part-00000-of-0000n ... (training samples split evenly in order)
// and eval_10k into `dir` (created as needed), each file through a
// temporary name and a rename. Options are checked first.
absl::Status WriteGeneratedBertData(const std::string& dir, const GeneratedBertOptions& options);

}  // namespace mlperf::datasets::bert
