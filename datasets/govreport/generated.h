// The demonstration's generated summarisation task, in the converted
// GovReport layout (tokenized_set.h): each sample a report, a separator and
// its summary, the report and the separator masked in the labels as the
// reference's are. A report is about one of `topics` topics: a share of
// its words are the topic's keywords, the rest filler; its summary names
// the topic, each word one of the topic's two headline keywords. A model
// summarises well only by reading the report: the summary given the topic
// has little entropy, the summary alone much more.
//
// For the starting checkpoint the demonstration pre-trains, a third split,
// "pretrain": the training reports alone, every token counted.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"

namespace mlperf::govreport {

struct GeneratedTaskOptions {
  int64_t vocab_size = 256;
  int topics = 8;
  int keywords = 16;  // per topic
  int64_t train_samples = 2000, validation_samples = 64;
  int64_t min_report = 40, max_report = 120;  // words
  int64_t summary = 12;                       // words, then the end token
  double on_topic = 0.4;  // the share of a report's words that are its topic's keywords
  double headline = 0.8;  // the first headline word's probability in a summary
  uint64_t seed = 2026;
  // The files' folder name, from every option.
  std::string Name() const;
};

// Token ids: a sample begins with kBegin, the report ends with kSeparator,
// the summary with kEnd; topic k's keywords are the `keywords` ids from
// kFirstKeyword + k * keywords, its headline words the first two.
inline constexpr int32_t kBegin = 0, kSeparator = 1, kEnd = 2, kFirstKeyword = 3;

// The three splits' arrays into `dir` (which must exist); options that do
// not fit the vocabulary are an error.
absl::Status WriteGeneratedTask(const std::filesystem::path& dir,
                                const GeneratedTaskOptions& options);

// The task's own loss: the mean over a summary's counted labels of the
// entropy of each given the topic (the end token certain), the least a
// model that knows the topic reaches.
double GeneratedTaskFloor(const GeneratedTaskOptions& options);

}  // namespace mlperf::govreport
