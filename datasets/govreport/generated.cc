#include "datasets/govreport/generated.h"

#include <cmath>
#include <random>
#include <vector>

#include "datasets/govreport/tokenized_set.h"
#include "fmt/format.h"

namespace mlperf::govreport {

namespace fs = std::filesystem;

std::string GeneratedTaskOptions::Name() const {
  return fmt::format("v{}-t{}x{}-n{}-{}-r{}-{}-s{}-p{}-h{}-seed{}", vocab_size, topics, keywords,
                     train_samples, validation_samples, min_report, max_report, summary, on_topic,
                     headline, seed);
}

namespace {

// One split's samples from its own stream; the pre-training split's reports
// are the training split's.
void Draw(const GeneratedTaskOptions& o, int64_t count, uint64_t stream, std::vector<Sample>* tasks,
          std::vector<Sample>* reports) {
  std::mt19937_64 rng(o.seed * 0x9e3779b97f4a7c15ULL + stream);
  // Raw draws only: the same samples from every standard library.
  const auto below = [&rng](uint64_t n) { return static_cast<int64_t>(rng() % n); };
  const auto chance = [&rng](double p) { return static_cast<double>(rng() >> 11) * 0x1p-53 < p; };
  const int64_t first_filler = kFirstKeyword + int64_t{o.topics} * o.keywords;
  const int64_t fillers = o.vocab_size - first_filler;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t topic = below(static_cast<uint64_t>(o.topics));
    const int32_t keyword0 = static_cast<int32_t>(kFirstKeyword + topic * o.keywords);
    const int64_t words =
        o.min_report + below(static_cast<uint64_t>(o.max_report - o.min_report + 1));
    Sample s;
    s.input_ids.push_back(kBegin);
    for (int64_t w = 0; w < words; ++w) {
      // The headline words are the topic's most frequent: half its keywords.
      int32_t word = static_cast<int32_t>(first_filler + below(static_cast<uint64_t>(fillers)));
      if (chance(o.on_topic))
        word = keyword0 + static_cast<int32_t>(
                              chance(0.5) ? below(2) : below(static_cast<uint64_t>(o.keywords)));
      s.input_ids.push_back(word);
    }
    s.input_ids.push_back(kSeparator);
    // The pre-training's summaries name the topic in other words (its
    // keywords 2 and 3): the base learns to summarise, the fine-tuning the
    // task's words.
    std::vector<int32_t> own = s.input_ids;
    s.labels.assign(s.input_ids.size(), kIgnored);
    for (int64_t w = 0; w < o.summary; ++w) {
      const bool first = chance(o.headline);
      s.input_ids.push_back(keyword0 + (first ? 0 : 1));
      s.labels.push_back(s.input_ids.back());
      own.push_back(keyword0 + (first ? 2 : 3));
    }
    s.input_ids.push_back(kEnd);
    s.labels.push_back(kEnd);
    own.push_back(kEnd);
    if (reports != nullptr) reports->push_back({own, own});
    tasks->push_back(std::move(s));
  }
}

}  // namespace

absl::Status WriteGeneratedTask(const fs::path& dir, const GeneratedTaskOptions& o) {
  if (o.topics < 1 || o.keywords < 2 || o.min_report < 1 || o.max_report < o.min_report ||
      o.summary < 1 || kFirstKeyword + int64_t{o.topics} * o.keywords >= o.vocab_size) {
    return absl::InvalidArgumentError(
        fmt::format("a generated task of {} topics of {} keywords does not fit a vocabulary of {}",
                    o.topics, o.keywords, o.vocab_size));
  }
  std::vector<Sample> train, validation, pretrain;
  Draw(o, o.train_samples, 1, &train, &pretrain);
  Draw(o, o.validation_samples, 2, &validation, nullptr);
  for (const auto& [split, samples] :
       {std::pair{"train", &train}, std::pair{"validation", &validation},
        std::pair{"pretrain", &pretrain}}) {
    if (absl::Status s = WriteTokenizedSet(dir, split, *samples); !s.ok()) return s;
  }
  return absl::OkStatus();
}

double GeneratedTaskFloor(const GeneratedTaskOptions& o) {
  const double p = o.headline;
  const double word = p > 0 && p < 1 ? -(p * std::log(p) + (1 - p) * std::log(1 - p)) : 0.0;
  return word * static_cast<double>(o.summary) / static_cast<double>(o.summary + 1);
}

}  // namespace mlperf::govreport
