// The LoRA benchmark's data (datasets/govreport): the converted arrays as
// scripts/convert_govreport.py writes them from Parquet files in the
// reference's layout (written by pyarrow, govreport_parquet.py) and read
// back here against the formulas that made them; the conversion's refusals;
// the reader's checks; the generated task.
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "datasets/govreport/generated.h"
#include "datasets/govreport/tokenized_set.h"
#include "datasets/npy.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "tests/datasets/test_dir.h"

namespace mlperf::govreport {
namespace {

namespace fs = std::filesystem;
using datasets::testing::TempDir;

// The exit status of a command.
int RunCommand(const std::string& command) {
  const int status = std::system((command + " > /dev/null 2>&1").c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int WriteParquet(const std::string& dir, const std::string& mode) {
  return RunCommand(fmt::format("/usr/bin/python3 {}/tests/datasets/govreport_parquet.py {} {}",
                                MLPERF_SOURCE_DIR, dir, mode));
}

int Convert(const std::string& from, const std::string& to) {
  return RunCommand(fmt::format("/usr/bin/python3 {}/scripts/convert_govreport.py {} {}",
                                MLPERF_SOURCE_DIR, from, to));
}

// govreport_parquet.py's formulas.
struct Expected {
  int64_t length, prompt;
  std::vector<int32_t> ids;
};
Expected Row(int split, int64_t i) {
  Expected e{.length = 10 + (i * 7 + split * 3) % 40, .prompt = 3 + i % 5, .ids = {}};
  for (int64_t t = 0; t < e.length; ++t)
    e.ids.push_back(static_cast<int32_t>((i * 31 + t * 17 + split * 5) % 1000));
  return e;
}

void ExpectConverted(const std::string& dir) {
  for (const auto& [split, rows] : {std::pair{0, 20}, std::pair{1, 7}}) {
    auto set = TokenizedSet::Open(dir, split == 0 ? "train" : "validation");
    ASSERT_TRUE(set.ok()) << set.status();
    ASSERT_EQ((*set)->samples(), rows);
    for (int64_t i = 0; i < rows; ++i) {
      const Expected e = Row(split, i);
      ASSERT_EQ((*set)->length(i), e.length) << i;
      // Read into more positions than the sample has: zeros, uncounted.
      constexpr int64_t kSeq = 56;
      std::vector<int32_t> tokens(kSeq), labels(kSeq);
      ASSERT_TRUE((*set)->Read(i, kSeq, 1000, tokens.data(), labels.data()).ok());
      for (int64_t t = 0; t < kSeq; ++t) {
        EXPECT_EQ(tokens[t], t < e.length ? e.ids[t] : 0) << i << " " << t;
        // The label of t is the next token where the reference counts it.
        const bool counted = t + 1 < e.length && t + 1 >= e.prompt;
        EXPECT_EQ(labels[t], counted ? e.ids[t + 1] : kIgnored) << i << " " << t;
      }
    }
  }
}

TEST(GovReportConversionTest, PaddedRowsLoseTheirPaddingAndShiftTheirLabels) {
  TempDir tmp("govreport_padded");
  ASSERT_EQ(WriteParquet(tmp / "parquet", "padded"), 0)
      << "pyarrow is missing for /usr/bin/python3";
  ASSERT_EQ(Convert(tmp / "parquet", tmp / "out"), 0);
  ExpectConverted(tmp / "out");
  // Never replaces what it wrote: a second conversion into it is refused.
  const auto before = fs::last_write_time(tmp / "out/train_offsets.npy");
  EXPECT_EQ(Convert(tmp / "parquet", tmp / "out"), 2);
  EXPECT_EQ(fs::last_write_time(tmp / "out/train_offsets.npy"), before);
}

TEST(GovReportConversionTest, RowsWithoutAMaskAreTakenWhole) {
  TempDir tmp("govreport_plain");
  ASSERT_EQ(WriteParquet(tmp / "parquet", "plain"), 0);
  ASSERT_EQ(Convert(tmp / "parquet", tmp / "out"), 0);
  ExpectConverted(tmp / "out");
}

TEST(GovReportConversionTest, RefusesWhatItCannotReadFaithfully) {
  TempDir tmp("govreport_refused");
  for (const char* mode : {"left", "counted_padding"}) {
    const std::string in = tmp / (std::string(mode) + "_in"),
                      out = tmp / (std::string(mode) + "_out");
    ASSERT_EQ(WriteParquet(in, mode), 0);
    EXPECT_EQ(Convert(in, out), 1) << mode;
    EXPECT_FALSE(fs::exists(fs::path(out) / "train_offsets.npy")) << mode;
  }
  // A missing file and a wrong command line: usage errors.
  EXPECT_EQ(Convert(tmp / "nothing", tmp / "out"), 2);
  EXPECT_EQ(RunCommand(
                fmt::format("/usr/bin/python3 {}/scripts/convert_govreport.py", MLPERF_SOURCE_DIR)),
            2);
}

TEST(TokenizedSetTest, ChecksTheArraysAndTheSamples) {
  TempDir tmp("govreport_reader");
  const std::vector<Sample> samples = {{{5, 6, 7}, {kIgnored, 6, 7}}, {{8, 9}, {kIgnored, 9}}};
  ASSERT_TRUE(WriteTokenizedSet(tmp.path(), "train", samples).ok());
  auto set = TokenizedSet::Open(tmp.path(), "train");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->longest(), 3);
  std::vector<int32_t> tokens(2), labels(2);
  // Longer than the model reads, or outside its vocabulary: errors.
  EXPECT_FALSE((*set)->Read(0, 2, 100, tokens.data(), labels.data()).ok());
  EXPECT_FALSE((*set)->Read(1, 2, 9, tokens.data(), labels.data()).ok());
  ASSERT_TRUE((*set)->Read(1, 2, 10, tokens.data(), labels.data()).ok());
  EXPECT_EQ(tokens, (std::vector<int32_t>{8, 9}));
  EXPECT_EQ(labels, (std::vector<int32_t>{9, kIgnored}));
  // Offsets that do not cover the tokens; a missing array.
  const std::vector<int64_t> short_offsets = {0, 3, 4};
  ASSERT_TRUE(datasets::WriteNpy(tmp / "train_offsets.npy", "<i8", {3}, short_offsets.data()).ok());
  EXPECT_FALSE(TokenizedSet::Open(tmp.path(), "train").ok());
  EXPECT_FALSE(TokenizedSet::Open(tmp.path(), "validation").ok());
}

TEST(GeneratedTaskTest, SummariesNameTheTopicAndOnlyTheyCount) {
  TempDir tmp("govreport_generated");
  GeneratedTaskOptions o{.train_samples = 50, .validation_samples = 10};
  ASSERT_TRUE(WriteGeneratedTask(tmp.path(), o).ok());
  auto train = TokenizedSet::Open(tmp.path(), "train");
  auto pretrain = TokenizedSet::Open(tmp.path(), "pretrain");
  ASSERT_TRUE(train.ok() && pretrain.ok());
  ASSERT_EQ((*train)->samples(), 50);
  ASSERT_EQ((*pretrain)->samples(), 50);
  const int64_t seq = (*train)->longest();
  std::vector<int32_t> tokens(seq), labels(seq), own(seq), own_labels(seq);
  for (int64_t i = 0; i < 50; ++i) {
    ASSERT_TRUE((*train)->Read(i, seq, o.vocab_size, tokens.data(), labels.data()).ok());
    ASSERT_TRUE((*pretrain)->Read(i, seq, o.vocab_size, own.data(), own_labels.data()).ok());
    const int64_t n = (*train)->length(i);
    ASSERT_EQ((*pretrain)->length(i), n);
    const int64_t separator = n - o.summary - 2;
    ASSERT_EQ(tokens[separator], kSeparator);
    ASSERT_EQ(tokens[n - 1], kEnd);
    // The counted labels are the summary and its end, each a headline word
    // of one topic.
    const int32_t headline =
        tokens[separator + 1] - (tokens[separator + 1] - kFirstKeyword) % o.keywords;
    for (int64_t t = 0; t < n; ++t) {
      EXPECT_EQ(labels[t] != kIgnored, t >= separator && t < n - 1) << i << " " << t;
      if (t > separator && t < n - 1) {
        EXPECT_TRUE(tokens[t] == headline || tokens[t] == headline + 1) << i << " " << t;
        // The pre-training's summary: the same topic's keywords 2 and 3.
        EXPECT_EQ(own[t], tokens[t] + 2);
      } else {
        EXPECT_EQ(own[t], tokens[t]);
      }
      // The pre-training counts every next token.
      EXPECT_EQ(own_labels[t], t + 1 < n ? own[t + 1] : kIgnored) << i << " " << t;
    }
  }
  // The same options, the same files.
  TempDir again("govreport_generated_again");
  ASSERT_TRUE(WriteGeneratedTask(again.path(), o).ok());
  for (const char* f : {"train_input_ids.npy", "validation_labels.npy", "pretrain_offsets.npy"}) {
    auto a = datasets::ReadNpy(tmp / f), b = datasets::ReadNpy(again / f);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->bytes, b->bytes) << f;
  }
  EXPECT_NEAR(GeneratedTaskFloor(o), 0.5004 * 12 / 13, 1e-3);
  EXPECT_FALSE(WriteGeneratedTask(tmp.path(), {.vocab_size = 100}).ok());
}

}  // namespace
}  // namespace mlperf::govreport
