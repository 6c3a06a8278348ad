// The demonstration's generated language, written as Megatron token files
// (the layout the references read): documents of a seeded first-order Markov
// language, each ending with the end-of-document token. From every token the
// next is one of `successors` tokens drawn for it, with falling
// probabilities, so the next token given the previous one has little
// entropy while every token is about equally frequent: a model reaches a
// low log perplexity only by using the context.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"
#include "datasets/megatron/indexed_dataset.h"

namespace mlperf::megatron {

struct GeneratedLanguageOptions {
  int64_t vocab_size = 256;  // token 0 is the end of a document
  int64_t documents = 2000;
  int64_t min_length = 32, max_length = 96;  // tokens per document, its end included
  int successors = 4;
  // The successors equally likely (entropy log(successors) given the
  // previous token), instead of falling by half.
  bool uniform = false;
  uint32_t seed = 20251;
  // Nonzero: the documents drawn from this seed, the language (every token's
  // successors) still from `seed`: another sample of the same language,
  // e.g. a validation set.
  uint32_t document_seed = 0;
  // The files' name, from every option: a changed option writes new files.
  std::string Name() const;
};

inline constexpr int64_t kEndOfDocument = 0;

// prefix.bin and prefix.idx.
absl::Status WriteGeneratedLanguage(const std::filesystem::path& prefix,
                                    const GeneratedLanguageOptions& options);

// Entropies in nats per token of a data set's tokens: of each token alone,
// and of a token given the one before it in its document.
struct TokenEntropy {
  double unigram = 0, conditional = 0;
};
TokenEntropy MeasureTokenEntropy(const IndexedDataset& data, int64_t vocab_size);

}  // namespace mlperf::megatron
