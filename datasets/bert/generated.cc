#include "datasets/bert/generated.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <utility>

#include "datasets/tfrecord.h"
#include "fmt/format.h"
#include "reference/core/philox.h"

namespace mlperf::datasets::bert {
namespace {

// Philox streams under the options' seed: the language, then one per
// sample of each split (below the shuffle's top-bit streams).
constexpr uint64_t kLanguageStream = uint64_t{1} << 62;
constexpr uint64_t kEvalStream = uint64_t{1} << 61;

// Bumped whenever the generator's output changes, so Name() does too.
constexpr int kGeneratorVersion = 2;

struct Draws {
  uint64_t seed, stream;
  uint64_t next = 0;
  uint32_t Bits() { return core::PhiloxBits(seed, stream, next++); }
  // Uniform in [0, n), n < 2^32.
  int64_t Below(int64_t n) {
    return static_cast<int64_t>((static_cast<uint64_t>(Bits()) * static_cast<uint64_t>(n)) >> 32);
  }
  double Uniform() { return Bits() * (1.0 / 4294967296.0); }
};

absl::Status CheckOptions(const GeneratedBertOptions& o) {
  const int64_t symbols = o.vocab_size - kFirstSymbolId;
  if (symbols < 4 || symbols % 2 != 0 || o.seq_len < 9 || o.max_predictions < 1 ||
      o.train_shards < 1 || o.train_samples < o.train_shards || o.eval_samples < 1) {
    return absl::InvalidArgumentError(fmt::format(
        "generated BERT data: vocab {} (4 specials + an even number >= 4 of symbols), seq_len {} "
        "(>= 9), max_predictions {}, {} training samples in {} shards, {} evaluation samples",
        o.vocab_size, o.seq_len, o.max_predictions, o.train_samples, o.train_shards,
        o.eval_samples));
  }
  return absl::OkStatus();
}

}  // namespace

std::string GeneratedBertOptions::Name() const {
  return fmt::format("themes{}-v{}-s{}-p{}-t{}x{}-e{}-seed{}{}", kGeneratorVersion, vocab_size,
                     seq_len, max_predictions, train_samples, train_shards, eval_samples, seed,
                     min_symbols > 0 ? fmt::format("-min{}", min_symbols) : "");
}

GeneratedLanguage MakeGeneratedLanguage(const GeneratedBertOptions& o) {
  Draws draws{o.seed, kLanguageStream};
  std::vector<int32_t> symbols;
  for (auto id = static_cast<int32_t>(kFirstSymbolId); id < o.vocab_size; ++id)
    symbols.push_back(id);
  for (auto i = static_cast<int64_t>(symbols.size()) - 1; i > 0; --i)
    std::swap(symbols[static_cast<size_t>(i)], symbols[static_cast<size_t>(draws.Below(i + 1))]);
  // Consecutive symbols of the shuffle are partners: an involution without
  // fixed points, so P(P(a)) = a and P(a) != a.
  GeneratedLanguage lang;
  lang.partner.assign(static_cast<size_t>(o.vocab_size), -1);
  for (size_t i = 0; i + 1 < symbols.size(); i += 2) {
    lang.partner[static_cast<size_t>(symbols[i])] = symbols[i + 1];
    lang.partner[static_cast<size_t>(symbols[i + 1])] = symbols[i];
  }
  return lang;
}

PretrainingExample GenerateBertSample(const GeneratedBertOptions& o, const GeneratedLanguage& lang,
                                      bool train, int64_t index) {
  Draws draws{o.seed, (train ? 0 : kEvalStream) + static_cast<uint64_t>(index)};
  const int64_t symbols = o.vocab_size - kFirstSymbolId;
  const int64_t max_len = o.seq_len - 3;
  const int64_t min_len =
      std::max<int64_t>(6, o.min_symbols > 0 ? std::min(o.min_symbols, max_len) : max_len / 2);
  const int64_t len = min_len + draws.Below(max_len - min_len + 1);
  const int64_t len_a = 3 + draws.Below(len - 5);

  std::vector<int32_t> tokens = {kClsId}, segments = {0};
  const auto theme_a = static_cast<int32_t>(kFirstSymbolId + draws.Below(symbols));
  tokens.insert(tokens.end(), static_cast<size_t>(len_a), theme_a);
  tokens.push_back(kSepId);
  segments.resize(tokens.size(), 0);
  PretrainingExample e(o.shape());
  e.next_sentence_label = static_cast<int32_t>(draws.Below(2));
  const int32_t next = lang.partner[static_cast<size_t>(theme_a)];
  int32_t theme_b = next;
  if (e.next_sentence_label == 1) {
    // Any symbol but the partner, so the label is checkable.
    theme_b = static_cast<int32_t>(kFirstSymbolId + draws.Below(symbols - 1));
    if (theme_b == next) theme_b = static_cast<int32_t>(o.vocab_size - 1);
  }
  tokens.insert(tokens.end(), static_cast<size_t>(len - len_a), theme_b);
  tokens.push_back(kSepId);
  segments.resize(tokens.size(), 1);

  // Masking: Python's round() rounds halves to even, as nearbyint does.
  const auto n = static_cast<int64_t>(tokens.size());
  std::vector<int64_t> candidates;
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[static_cast<size_t>(i)] >= kFirstSymbolId) candidates.push_back(i);
  }
  const int64_t predictions =
      std::min({o.max_predictions, static_cast<int64_t>(candidates.size()),
                std::max<int64_t>(1, static_cast<int64_t>(std::nearbyint(0.15 * n)))});
  for (int64_t i = 0; i < predictions; ++i) {
    const int64_t j = i + draws.Below(static_cast<int64_t>(candidates.size()) - i);
    std::swap(candidates[static_cast<size_t>(i)], candidates[static_cast<size_t>(j)]);
  }
  std::sort(candidates.begin(), candidates.begin() + predictions);
  std::vector<int32_t> shown = tokens;
  for (int64_t k = 0; k < predictions; ++k) {
    const auto p = static_cast<size_t>(candidates[static_cast<size_t>(k)]);
    const double u = draws.Uniform();
    if (u < 0.8) {
      shown[p] = kMaskId;
    } else if (u >= 0.9) {
      shown[p] = static_cast<int32_t>(kFirstSymbolId + draws.Below(o.vocab_size - kFirstSymbolId));
    }
    e.masked_lm_positions[static_cast<size_t>(k)] = static_cast<int32_t>(p);
    e.masked_lm_ids[static_cast<size_t>(k)] = tokens[p];
    e.masked_lm_weights[static_cast<size_t>(k)] = 1.0f;
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    e.input_ids[i] = shown[i];
    e.segment_ids[i] = segments[i];
    e.input_mask[i] = 1.0f;
  }
  return e;
}

absl::Status WriteGeneratedBertData(const std::string& dir, const GeneratedBertOptions& o) {
  if (absl::Status s = CheckOptions(o); !s.ok()) return s;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::PermissionDeniedError(fmt::format("{}: cannot create: {}", dir, ec.message()));
  }
  const GeneratedLanguage lang = MakeGeneratedLanguage(o);
  auto write = [&](const std::string& name, bool train, int64_t begin, int64_t end) {
    absl::StatusOr<TfRecordWriter> writer =
        TfRecordWriter::Open((std::filesystem::path(dir) / name).string());
    if (!writer.ok()) return writer.status();
    for (int64_t i = begin; i < end; ++i) {
      if (absl::Status s =
              writer->Write(MakePretrainingExample(GenerateBertSample(o, lang, train, i)));
          !s.ok())
        return s;
    }
    return writer->Close();
  };
  for (int s = 0; s < o.train_shards; ++s) {
    const int64_t begin = o.train_samples * s / o.train_shards;
    const int64_t end = o.train_samples * (s + 1) / o.train_shards;
    if (absl::Status st =
            write(fmt::format("part-{:05d}-of-{:05d}", s, o.train_shards), true, begin, end);
        !st.ok())
      return st;
  }
  return write("eval_10k", false, 0, o.eval_samples);
}

}  // namespace mlperf::datasets::bert
