// Megatron's data (datasets/megatron) against NumPy (tests/datasets/
// megatron_numpy.py under /usr/bin/python3): NumPy's RandomState shuffles and
// 64-bit draws reproduced; indexed datasets written in the documented layout
// read back, and ours written byte for byte as that layout; GPTDataset's
// document, sample and shuffle indices and every sample's tokens equal to a
// NumPy transcription (one epoch, several epochs with and without a separate
// final epoch, no extra token, a padded last sample); every step's samples
// dealt to exactly one data-parallel rank; broken files refused with one
// message naming the file. Skips where NumPy is missing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "datasets/megatron/generated.h"
#include "datasets/megatron/gpt_index.h"
#include "datasets/megatron/indexed_dataset.h"
#include "datasets/megatron/numpy_random.h"
#include "datasets/npy.h"
#include "fmt/format.h"
#include "test_dir.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::megatron {
namespace {

using datasets::testing::TempDir;

bool HaveNumpy() { return std::system("/usr/bin/python3 -c 'import numpy' > /dev/null 2>&1") == 0; }

int Numpy(const std::string& args) {
  return std::system(fmt::format("/usr/bin/python3 {}/tests/datasets/megatron_numpy.py {}",
                                 MLPERF_SOURCE_DIR, args)
                         .c_str());
}

template <typename T>
std::vector<T> Load(const std::string& path) {
  absl::StatusOr<datasets::NpyArray> a = datasets::ReadNpy(path);
  EXPECT_TRUE(a.ok()) << a.status();
  if (!a.ok()) return {};
  EXPECT_EQ(datasets::NpyElementSize(a->dtype), static_cast<int64_t>(sizeof(T))) << path;
  std::vector<T> v(a->bytes.size() / sizeof(T));
  std::memcpy(v.data(), a->bytes.data(), v.size() * sizeof(T));
  return v;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

class MegatronTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!HaveNumpy()) GTEST_SKIP() << "NumPy is missing for /usr/bin/python3";
  }
  TempDir dir_{"megatron"};
};

TEST_F(MegatronTest, RandomStateShufflesAndWideDrawsEqualNumpys) {
  ASSERT_EQ(Numpy("random " + dir_ / "r"), 0);
  const std::vector<int64_t> shuffles = Load<int64_t>(dir_ / "r_shuffles.npy");
  size_t at = 0;
  for (auto [seed, n] : std::vector<std::pair<uint32_t, int64_t>>{
           {0, 10}, {1234, 1000}, {4294967295u, 77}, {99, 70000}}) {
    std::vector<int64_t> ours(n);
    for (int64_t i = 0; i < n; ++i) ours[i] = i;
    NumpyRandomState(seed).Shuffle(std::span<int64_t>(ours));
    ASSERT_LE(at + n, shuffles.size());
    EXPECT_TRUE(std::equal(ours.begin(), ours.end(), shuffles.begin() + at)) << "seed " << seed;
    at += n;
  }
  const std::vector<int64_t> wide = Load<int64_t>(dir_ / "r_wide.npy");
  NumpyRandomState state(7);
  for (int64_t v : wide) EXPECT_EQ(static_cast<int64_t>(state.Interval((1ull << 40) + 6)), v);
}

TEST_F(MegatronTest, DatasetsInTheDocumentedLayoutReadBackAndOursMatchByteForByte) {
  for (const char* type : {"uint16", "int32"}) {
    SCOPED_TRACE(type);
    const std::string theirs = dir_ / fmt::format("theirs_{}", type);
    ASSERT_EQ(Numpy(fmt::format("write {} {} 50 3", theirs, type)), 0);
    auto data = IndexedDataset::Open(theirs);
    ASSERT_TRUE(data.ok()) << data.status();
    EXPECT_EQ((*data)->sequences(), 50);
    EXPECT_EQ((*data)->documents(), 50);
    // Ours, from the tokens read: the same two files.
    const std::string ours = dir_ / fmt::format("ours_{}", type);
    IndexedDatasetWriter writer(ours, (*data)->token_type());
    for (int64_t s = 0; s < (*data)->sequences(); ++s) {
      std::vector<int64_t> tokens((*data)->sequence_lengths()[s]);
      ASSERT_TRUE((*data)->Read(s, 0, tokens.size(), tokens.data()).ok());
      ASSERT_TRUE(writer.AddDocument(tokens).ok());
    }
    ASSERT_TRUE(writer.Finish().ok());
    EXPECT_EQ(Slurp(ours + ".bin"), Slurp(theirs + ".bin"));
    EXPECT_EQ(Slurp(ours + ".idx"), Slurp(theirs + ".idx"));
  }
}

struct IndexCase {
  int64_t seq, samples;
  bool extra, drop;
};

TEST_F(MegatronTest, GptIndicesAndSamplesEqualTheNumpyTranscription) {
  const std::string prefix = dir_ / "c4";
  ASSERT_EQ(Numpy(fmt::format("write {} uint16 40 11", prefix)), 0);
  auto data = IndexedDataset::Open(prefix);
  ASSERT_TRUE(data.ok()) << data.status();
  std::vector<int32_t> exposed((*data)->sequences());
  for (size_t i = 0; i < exposed.size(); ++i) exposed[i] = static_cast<int32_t>(i);
  // About 840 tokens an epoch: one epoch; 3 epochs whose last holds little
  // (kept apart); 2 epochs nearly full (shuffled together); no extra token;
  // a padded last sample.
  const int64_t tokens = (*data)->total_tokens();
  const std::vector<IndexCase> cases = {{16, 0, true, true},
                                        {16, (2 * tokens + 40) / 16, true, true},
                                        {8, (2 * tokens - 16) / 8, true, true},
                                        {10, 0, false, true},
                                        {7, 0, true, false}};
  int k = 0;
  bool saw_separate = false, saw_together = false;
  for (const IndexCase& c : cases) {
    SCOPED_TRACE(fmt::format("case {}: seq {} samples {}", k, c.seq, c.samples));
    const uint32_t seed = 1234 + k;
    const std::string out = dir_ / fmt::format("case{}", k++);
    ASSERT_EQ(Numpy(fmt::format("index {} {} {} {} {} {} {}", prefix, out, c.seq, seed, c.samples,
                                c.extra ? 1 : 0, c.drop ? 1 : 0)),
              0);
    const GptIndexOptions options{.sequence_length = c.seq,
                                  .seed = seed,
                                  .num_samples = c.samples,
                                  .add_extra_token = c.extra,
                                  .drop_last_partial = c.drop};
    absl::StatusOr<GptIndex> index = BuildGptIndex((*data)->sequence_lengths(), exposed, options);
    ASSERT_TRUE(index.ok()) << index.status();
    if (index->epochs > 1) (index->separate_final_epoch ? saw_separate : saw_together) = true;
    EXPECT_EQ(index->documents, Load<int32_t>(out + "_documents.npy"));
    EXPECT_EQ(index->samples, Load<int64_t>(out + "_samples.npy"));
    EXPECT_EQ(index->shuffle, Load<int64_t>(out + "_shuffle.npy"));
    const std::vector<int64_t> expected = Load<int64_t>(out + "_tokens.npy");
    const int64_t width = c.seq + (c.extra ? 1 : 0);
    ASSERT_EQ(static_cast<int64_t>(expected.size()), index->size() * width);
    std::vector<int64_t> sample(width);
    for (int64_t i = 0; i < index->size(); ++i) {
      ASSERT_TRUE(ReadGptSample(**data, *index, options, i, -1, 65536, sample).ok());
      ASSERT_TRUE(std::equal(sample.begin(), sample.end(), expected.begin() + i * width))
          << "sample " << i;
    }
  }
  EXPECT_TRUE(saw_separate);
  EXPECT_TRUE(saw_together);
}

TEST(MegatronSharding, EveryStepsSamplesGoToExactlyOneRank) {
  for (int64_t ranks : {1, 2, 4}) {
    const int64_t micro = 2, global = 16, chunks = global / (micro * ranks);
    for (int64_t step : {0, 3}) {
      std::multiset<int64_t> seen;
      for (int64_t r = 0; r < ranks; ++r)
        for (int64_t m = 0; m < chunks; ++m)
          for (int64_t j = 0; j < micro; ++j)
            seen.insert(RankSample(step, m, j, r, ranks, micro, global));
      ASSERT_EQ(static_cast<int64_t>(seen.size()), global);
      for (int64_t s = step * global; s < (step + 1) * global; ++s) EXPECT_EQ(seen.count(s), 1u);
    }
  }
  // Rank 1 of 2 reads the second slice of each micro_batch x ranks chunk.
  EXPECT_EQ(RankSample(0, 0, 0, 1, 2, 2, 16), 2);
  EXPECT_EQ(RankSample(0, 1, 1, 1, 2, 2, 16), 7);
}

// The demonstration's language: documents within their lengths, each ending
// with the end token; the same options give the same bytes, another seed
// others; a token alone is hard to predict (unigram entropy above the
// Llama 3.1 target's 3.3 nats) and easy from the one before it.
TEST(MegatronGenerated, LanguageNeedsItsContextAndIsReproducible) {
  TempDir dir("megatron_generated");
  const GeneratedLanguageOptions options{.documents = 300};
  ASSERT_TRUE(WriteGeneratedLanguage(dir / "a", options).ok());
  ASSERT_TRUE(WriteGeneratedLanguage(dir / "b", options).ok());
  GeneratedLanguageOptions other = options;
  other.seed += 1;
  ASSERT_TRUE(WriteGeneratedLanguage(dir / "c", other).ok());
  EXPECT_EQ(Slurp(dir / "a.bin"), Slurp(dir / "b.bin"));
  EXPECT_EQ(Slurp(dir / "a.idx"), Slurp(dir / "b.idx"));
  EXPECT_NE(Slurp(dir / "a.bin"), Slurp(dir / "c.bin"));
  EXPECT_NE(options.Name(), other.Name());
  auto data = IndexedDataset::Open(dir / "a");
  ASSERT_TRUE(data.ok()) << data.status();
  ASSERT_EQ((*data)->documents(), 300);
  EXPECT_EQ((*data)->token_type(), TokenType::kUint16);
  for (int64_t s = 0; s < (*data)->sequences(); ++s) {
    const int64_t n = (*data)->sequence_lengths()[s];
    ASSERT_GE(n, options.min_length);
    ASSERT_LE(n, options.max_length);
    std::vector<int64_t> tokens(n);
    ASSERT_TRUE((*data)->Read(s, 0, n, tokens.data(), options.vocab_size).ok());
    EXPECT_EQ(tokens.back(), kEndOfDocument);
    EXPECT_EQ(std::count(tokens.begin(), tokens.end(), kEndOfDocument), 1);
  }
  const TokenEntropy e = MeasureTokenEntropy(**data, options.vocab_size);
  std::printf("unigram %.2f nats, next given previous %.2f nats\n", e.unigram, e.conditional);
  EXPECT_GT(e.unigram, 4.0);
  EXPECT_LT(e.conditional, 1.6);
  EXPECT_FALSE(WriteGeneratedLanguage(dir / "d", {.vocab_size = 2}).ok());
}

// A document seed draws other documents of the same language (a validation
// set): every transition they hold is one the language's training documents
// hold too, while another language's seed gives transitions they never do.
TEST(MegatronGenerated, DocumentSeedGivesOtherDocumentsOfTheSameLanguage) {
  TempDir dir("megatron_generated_docs");
  const GeneratedLanguageOptions train{.documents = 3000};
  GeneratedLanguageOptions validation{.documents = 200};
  validation.document_seed = 7;
  GeneratedLanguageOptions other_language = validation;
  other_language.seed += 1;
  for (const auto& [name, o] : {std::pair<const char*, GeneratedLanguageOptions>{"t", train},
                                {"v", validation},
                                {"o", other_language}})
    ASSERT_TRUE(WriteGeneratedLanguage(dir / name, o).ok());
  EXPECT_NE(train.Name(), validation.Name());
  const auto pairs = [&](const char* name) {
    auto data = IndexedDataset::Open(dir / name);
    EXPECT_TRUE(data.ok()) << data.status();
    std::set<std::pair<int64_t, int64_t>> out;
    for (int64_t s = 0; s < (*data)->sequences(); ++s) {
      std::vector<int64_t> tokens((*data)->sequence_lengths()[s]);
      EXPECT_TRUE(
          (*data)->Read(s, 0, static_cast<int64_t>(tokens.size()), tokens.data(), 256).ok());
      for (size_t i = 1; i < tokens.size(); ++i) out.insert({tokens[i - 1], tokens[i]});
    }
    return out;
  };
  const auto seen = pairs("t");
  const auto in = [&seen](const std::set<std::pair<int64_t, int64_t>>& some) {
    int64_t n = 0;
    for (const auto& p : some) n += seen.count(p);
    return n;
  };
  const auto v = pairs("v"), o = pairs("o");
  EXPECT_EQ(in(v), static_cast<int64_t>(v.size()));
  EXPECT_LT(in(o), static_cast<int64_t>(o.size()) / 2);
}

// Broken files: one message naming the file, nothing read.
TEST(MegatronFiles, BrokenIndicesAreRefusedNamingTheFile) {
  TempDir dir("megatron_bad");
  const std::string prefix = dir / "set";
  {
    IndexedDatasetWriter writer(prefix, TokenType::kUint16);
    ASSERT_TRUE(writer.AddDocument(std::vector<int64_t>{1, 2, 3}).ok());
    ASSERT_TRUE(writer.AddDocument(std::vector<int64_t>{4, 5}).ok());
    EXPECT_FALSE(writer.AddDocument(std::vector<int64_t>{70000}).ok());
    ASSERT_TRUE(writer.Finish().ok());
  }
  auto good = IndexedDataset::Open(prefix);
  ASSERT_TRUE(good.ok()) << good.status();
  std::vector<int64_t> t(3);
  ASSERT_TRUE((*good)->Read(0, 0, 3, t.data()).ok());
  EXPECT_EQ(t, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE((*good)->Read(1, 1, 2, t.data()).ok());  // past the sequence
  const absl::Status vocab = (*good)->Read(1, 0, 2, t.data(), 5);
  EXPECT_NE(std::string(vocab.message()).find("sequence 1 token 1 is 5, outside [0, 5)"),
            std::string::npos)
      << vocab;

  const std::string idx = Slurp(prefix + ".idx"), bin = Slurp(prefix + ".bin");
  auto with = [&](std::string idx_bytes, std::string bin_bytes) {
    std::ofstream(prefix + ".idx", std::ios::binary | std::ios::trunc) << idx_bytes;
    std::ofstream(prefix + ".bin", std::ios::binary | std::ios::trunc) << bin_bytes;
    auto opened = IndexedDataset::Open(prefix);
    return opened.ok() ? std::string("opened") : std::string(opened.status().message());
  };
  auto patched = [&](size_t at, std::string bytes) {
    std::string s = idx;
    s.replace(at, bytes.size(), bytes);
    return s;
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {with(idx.substr(0, 20), bin), "no MMIDIDX header"},
      {with(patched(0, "XMIDIDX"), bin), "no MMIDIDX header"},
      {with(patched(9, std::string("\2", 1)), bin), "version 2"},
      {with(patched(17, std::string("\7", 1)), bin), "token type code 7"},
      {with(idx.substr(0, idx.size() - 8), bin),
       "2 sequences and 3 documents need more than its 74 bytes"},
      {with(idx + "xyz", bin), "85 bytes where 2 sequences and 3 documents take 82"},
      {with(patched(18, std::string("\xff\xff\xff\xff\xff\xff\xff\x0f", 8)), bin),
       "need more than"},
      {with(idx, bin.substr(0, 6)), "sequence 1 (2 tokens at byte 6) lies outside"},
      {with(patched(idx.size() - 8, std::string("\3", 1)), bin), "the last document boundary is 3"},
  };
  for (const auto& [message, expected] : cases) {
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_NE(message.find("set.idx"), std::string::npos) << message;
  }
  std::filesystem::remove(prefix + ".bin");
  auto missing = IndexedDataset::Open(prefix);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(std::string(missing.status().message()).find("set.bin: cannot open"),
            std::string::npos);
}

}  // namespace
}  // namespace mlperf::megatron
