#include "datasets/megatron/generated.h"

#include <cmath>
#include <vector>

#include "datasets/megatron/numpy_random.h"
#include "fmt/format.h"

namespace mlperf::megatron {

namespace {

// The successors' probabilities fall by half: 8/15, 4/15, 2/15, 1/15 for four.
int64_t DrawSuccessor(NumpyRandomState& random, int successors) {
  const uint64_t total = (uint64_t{1} << successors) - 1;
  uint64_t u = random.Interval(total - 1);
  for (int k = 0; k < successors; ++k) {
    const uint64_t weight = uint64_t{1} << (successors - 1 - k);
    if (u < weight) return k;
    u -= weight;
  }
  return successors - 1;
}

}  // namespace

std::string GeneratedLanguageOptions::Name() const {
  std::string name = fmt::format("markov-v{}-d{}-l{}-{}-s{}-seed{}", vocab_size, documents,
                                 min_length, max_length, successors, seed);
  if (uniform) name += "-uniform";
  if (document_seed != 0) name += fmt::format("-docs{}", document_seed);
  return name;
}

absl::Status WriteGeneratedLanguage(const std::filesystem::path& prefix,
                                    const GeneratedLanguageOptions& o) {
  if (o.vocab_size < 3 || o.documents < 1 || o.min_length < 2 || o.max_length < o.min_length ||
      o.successors < 1 || o.successors > 16 || o.successors >= o.vocab_size)
    return absl::InvalidArgumentError("generated language: an option is out of range");
  NumpyRandomState random(o.seed);
  // Each token's successors among the non-end tokens.
  const int64_t words = o.vocab_size - 1;
  std::vector<int64_t> next(words * o.successors);
  for (int64_t& t : next) t = 1 + static_cast<int64_t>(random.Interval(words - 1));
  NumpyRandomState other(o.document_seed);
  NumpyRandomState& random_docs = o.document_seed != 0 ? other : random;
  IndexedDatasetWriter writer(prefix, TokenTypeForVocabulary(o.vocab_size));
  std::vector<int64_t> doc;
  for (int64_t d = 0; d < o.documents; ++d) {
    const int64_t length =
        o.min_length + static_cast<int64_t>(random_docs.Interval(o.max_length - o.min_length));
    doc.assign(1, 1 + static_cast<int64_t>(random_docs.Interval(words - 1)));
    while (static_cast<int64_t>(doc.size()) < length - 1)
      doc.push_back(next[(doc.back() - 1) * o.successors +
                         (o.uniform ? static_cast<int64_t>(random_docs.Interval(o.successors - 1))
                                    : DrawSuccessor(random_docs, o.successors))]);
    doc.push_back(kEndOfDocument);
    if (absl::Status s = writer.AddDocument(doc); !s.ok()) return s;
  }
  return writer.Finish();
}

TokenEntropy MeasureTokenEntropy(const IndexedDataset& data, int64_t vocab_size) {
  std::vector<double> single(vocab_size, 0.0), pairs(vocab_size * vocab_size, 0.0);
  std::vector<int64_t> tokens;
  double n = 0, transitions = 0;
  for (int64_t s = 0; s < data.sequences(); ++s) {
    tokens.resize(data.sequence_lengths()[s]);
    if (!data.Read(s, 0, static_cast<int64_t>(tokens.size()), tokens.data(), vocab_size).ok())
      continue;
    for (size_t i = 0; i < tokens.size(); ++i) {
      single[tokens[i]] += 1;
      n += 1;
      if (i > 0) {
        pairs[tokens[i - 1] * vocab_size + tokens[i]] += 1;
        transitions += 1;
      }
    }
  }
  TokenEntropy e;
  for (double c : single)
    if (c > 0) e.unigram -= c / n * std::log(c / n);
  // H(next | previous) = H(previous, next) - H(previous), over the pairs.
  std::vector<double> previous(vocab_size, 0.0);
  for (int64_t a = 0; a < vocab_size; ++a)
    for (int64_t b = 0; b < vocab_size; ++b) previous[a] += pairs[a * vocab_size + b];
  for (int64_t a = 0; a < vocab_size; ++a)
    for (int64_t b = 0; b < vocab_size; ++b) {
      const double c = pairs[a * vocab_size + b];
      if (c > 0) e.conditional -= c / transitions * std::log(c / previous[a]);
    }
  return e;
}

}  // namespace mlperf::megatron
