// BERT pretraining data (datasets/bert): the tf.Example schema both ways,
// checked against a hand-assembled wire encoding; each malformed input's
// one-line error; the loader's training sharding (no sample twice in an
// epoch over ranks, only the remainder dropped, deterministic) and
// evaluation (every sample exactly once, padding counted); the directory
// listing and check; the generated language's statistics.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "datasets/bert/data_files.h"
#include "datasets/bert/generated.h"
#include "datasets/bert/loader.h"
#include "datasets/bert/pretraining_example.h"
#include "datasets/index_cache.h"
#include "datasets/shuffle.h"
#include "datasets/tfrecord.h"
#include "tests/datasets/test_dir.h"

namespace mlperf::datasets::bert {
namespace {

using testing::TempDir;

constexpr PretrainingShape kShape{.seq_len = 8, .max_predictions = 2};

// --- A tf.Example encoder written from the wire format, not our .proto. ---
void Varint(uint64_t v, std::string& out) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
std::string Field(int number, const std::string& bytes) {  // length-delimited
  std::string out;
  Varint(static_cast<uint64_t>(number) << 3 | 2, out);
  Varint(bytes.size(), out);
  return out + bytes;
}
std::string Int64Feature(const std::vector<int64_t>& values) {
  std::string packed;
  for (int64_t v : values) Varint(static_cast<uint64_t>(v), packed);
  return Field(3, Field(1, packed));  // Feature.int64_list { value }
}
std::string FloatFeature(const std::vector<float>& values) {
  std::string packed(values.size() * 4, '\0');
  std::memcpy(packed.data(), values.data(), packed.size());
  return Field(2, Field(1, packed));  // Feature.float_list { value }
}
std::string BytesFeature(const std::string& value) { return Field(1, Field(1, value)); }
std::string Encode(const std::map<std::string, std::string>& features) {
  std::string map;
  for (const auto& [name, feature] : features) map += Field(1, Field(1, name) + Field(2, feature));
  return Field(1, map);  // Example.features
}

// A valid sample of kShape as TensorFlow would write it, feature by feature.
std::map<std::string, std::string> ValidFeatures() {
  return {{"input_ids", Int64Feature({1, 7, 3, 9, 2, 11, 2, 0})},
          {"input_mask", Int64Feature({1, 1, 1, 1, 1, 1, 1, 0})},
          {"segment_ids", Int64Feature({0, 0, 0, 0, 0, 1, 1, 0})},
          {"masked_lm_positions", Int64Feature({2, 0})},
          {"masked_lm_ids", Int64Feature({5, 0})},
          {"masked_lm_weights", FloatFeature({1.0f, 0.0f})},
          {"next_sentence_labels", Int64Feature({1})}};
}

PretrainingExample Sample(int64_t id, const PretrainingShape& shape = kShape) {
  PretrainingExample e(shape);
  for (int64_t i = 0; i < shape.seq_len; ++i) {
    e.input_ids[i] = static_cast<int32_t>(i == 1 ? id : 10 + i);
    e.segment_ids[i] = i >= shape.seq_len / 2;
    e.input_mask[i] = i + 1 < shape.seq_len;
  }
  e.masked_lm_positions[0] = 1;
  e.masked_lm_ids[0] = static_cast<int32_t>(id);
  e.masked_lm_weights[0] = 1.0f;
  e.next_sentence_label = static_cast<int32_t>(id % 2);
  return e;
}

void WriteShard(const std::string& path, const std::vector<std::string>& records) {
  absl::StatusOr<TfRecordWriter> w = TfRecordWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const std::string& r : records) ASSERT_TRUE(w->Write(r).ok());
  ASSERT_TRUE(w->Close().ok());
}

// Shards holding samples first..first+n-1 (input_ids[1] = the sample's number).
std::vector<std::string> WriteNumbered(const TempDir& dir, int64_t n, int shards) {
  std::vector<std::string> files;
  for (int s = 0; s < shards; ++s) {
    std::vector<std::string> records;
    for (int64_t i = n * s / shards; i < n * (s + 1) / shards; ++i)
      records.push_back(MakePretrainingExample(Sample(i)));
    files.push_back(dir / ("part-0000" + std::to_string(s)));
    WriteShard(files.back(), records);
  }
  return files;
}

void ExpectOneLineError(const absl::Status& s, const std::vector<std::string>& parts) {
  ASSERT_FALSE(s.ok());
  const std::string m(s.message());
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << m << " / " << p;
}

TEST(PretrainingExampleTest, RoundTripsAndReadsTheWireFormat) {
  const PretrainingExample e = Sample(42, {.seq_len = 12, .max_predictions = 3});
  absl::StatusOr<PretrainingExample> back =
      ParsePretrainingExample(MakePretrainingExample(e), {12, 3}, "x:0");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->input_ids, e.input_ids);
  EXPECT_EQ(back->segment_ids, e.segment_ids);
  EXPECT_EQ(back->input_mask, e.input_mask);
  EXPECT_EQ(back->masked_lm_positions, e.masked_lm_positions);
  EXPECT_EQ(back->masked_lm_ids, e.masked_lm_ids);
  EXPECT_EQ(back->masked_lm_weights, e.masked_lm_weights);
  EXPECT_EQ(back->next_sentence_label, 0);

  absl::StatusOr<PretrainingExample> wire =
      ParsePretrainingExample(Encode(ValidFeatures()), kShape, "x:0");
  ASSERT_TRUE(wire.ok()) << wire.status();
  EXPECT_EQ(wire->input_ids, (std::vector<int32_t>{1, 7, 3, 9, 2, 11, 2, 0}));
  EXPECT_EQ(wire->input_mask, (std::vector<float>{1, 1, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(wire->segment_ids, (std::vector<int32_t>{0, 0, 0, 0, 0, 1, 1, 0}));
  EXPECT_EQ(wire->masked_lm_positions, (std::vector<int32_t>{2, 0}));
  EXPECT_EQ(wire->masked_lm_ids, (std::vector<int32_t>{5, 0}));
  EXPECT_EQ(wire->masked_lm_weights, (std::vector<float>{1, 0}));
  EXPECT_EQ(wire->next_sentence_label, 1);
}

TEST(PretrainingExampleTest, EachMalformedFeatureIsAOneLineErrorNamingIt) {
  struct Case {
    std::string feature, replacement, expect;  // replacement "" = drop the feature
  };
  const std::vector<Case> cases = {
      {"masked_lm_weights", "", "missing"},
      {"input_ids", Int64Feature({1, 2, 3}), "3 int64 values, expected 8"},
      {"masked_lm_ids", Int64Feature({1, 2, 3}), "expected 2"},
      {"masked_lm_weights", Int64Feature({1, 0}), "is a int64 list, expected float"},
      {"input_ids", FloatFeature({1, 2, 3, 4, 5, 6, 7, 8}), "is a float list, expected int64"},
      {"next_sentence_labels", BytesFeature("1"), "bytes"},
      {"masked_lm_positions", Int64Feature({8, 0}), "value 8 at index 0 is outside [0, 8)"},
      {"masked_lm_positions", Int64Feature({0, -1}), "outside [0, 8)"},
      {"input_ids", Int64Feature({1, 2, 3, -4, 5, 6, 7, 8}), "value -4"},
      {"input_ids", Int64Feature({1, 2, 3, int64_t{1} << 31, 5, 6, 7, 8}), "outside"},
      {"input_mask", Int64Feature({1, 1, 2, 1, 1, 1, 1, 0}), "value 2"},
      {"segment_ids", Int64Feature({0, 0, 0, 0, 0, 1, 2, 0}), "value 2"},
      {"next_sentence_labels", Int64Feature({2}), "value 2"},
      {"next_sentence_labels", Int64Feature({0, 1}), "2 int64 values, expected 1"},
      {"masked_lm_weights", FloatFeature({0.5f, 0.0f}), "not 0 or 1"},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::string> f = ValidFeatures();
    if (c.replacement.empty()) {
      f.erase(c.feature);
    } else {
      f[c.feature] = c.replacement;
    }
    ExpectOneLineError(ParsePretrainingExample(Encode(f), kShape, "shard:1234").status(),
                       {"shard:1234", "feature " + c.feature, c.expect});
  }
  ExpectOneLineError(ParsePretrainingExample("\xff\xff garbage", kShape, "shard:9").status(),
                     {"shard:9", "not a valid tf.Example"});
  // A vocabulary bound, when given, keeps ids inside the embedding table.
  PretrainingShape bounded = kShape;
  bounded.vocab_size = 11;
  ExpectOneLineError(ParsePretrainingExample(Encode(ValidFeatures()), bounded, "s:0").status(),
                     {"feature input_ids", "value 11 at index 5 is outside [0, 11)"});
  bounded.vocab_size = 12;
  EXPECT_TRUE(ParsePretrainingExample(Encode(ValidFeatures()), bounded, "s:0").ok());
}

absl::StatusOr<std::unique_ptr<BertLoader>> OpenEval(const std::vector<std::string>& files,
                                                     int batch = 4) {
  return BertLoader::Open({.files = files, .train = false, .batch_size = batch, .shape = kShape});
}

// Reads the whole evaluation pass, returning the first error.
absl::Status ReadAll(BertLoader& loader) {
  BertBatch b;
  while (true) {
    absl::StatusOr<bool> more = loader.Next(&b);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
  }
}

TEST(BertLoaderTest, BadFilesAreOneLineErrorsNamingFileAndRecord) {
  TempDir dir("bert_bad");
  const std::vector<std::string> good = WriteNumbered(dir, 10, 1);
  absl::StatusOr<std::vector<TfRecordLocation>> index = IndexTfRecordFile(good[0], true);
  ASSERT_TRUE(index.ok());
  const TfRecordLocation third = (*index)[3];

  // A flipped data byte: found when that record is read, not at Open.
  const std::string corrupt = dir / "part-corrupt";
  std::filesystem::copy_file(good[0], corrupt);
  {
    std::fstream f(corrupt, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(third.offset + 12 + 5));
    f.put('\x7f');
  }
  absl::StatusOr<std::unique_ptr<BertLoader>> loader = OpenEval({corrupt});
  ASSERT_TRUE(loader.ok()) << loader.status();
  ExpectOneLineError(ReadAll(**loader),
                     {corrupt, "byte " + std::to_string(third.offset), "checksum"});

  // A record that frames fine but holds another schema (ImageNet).
  const std::string imagenet = dir / "part-imagenet";
  WriteShard(imagenet, {MakeImageExample("jpeg bytes", 7)});
  loader = OpenEval({good[0], imagenet});
  ASSERT_TRUE(loader.ok()) << loader.status();
  ExpectOneLineError(ReadAll(**loader), {imagenet + ":0", "feature input_ids", "missing"});

  // Records of another shape.
  const std::string other = dir / "part-other";
  WriteShard(other, {MakePretrainingExample(Sample(1, {.seq_len = 16, .max_predictions = 2}))});
  loader = OpenEval({other});
  ASSERT_TRUE(loader.ok());
  ExpectOneLineError(ReadAll(**loader), {other + ":0", "input_ids", "16 int64 values, expected 8"});

  // Found at Open: an empty shard, a truncated file, a missing file, a
  // directory, a FIFO (which must not hang).
  const std::string empty = dir / "part-empty";
  std::ofstream(empty).close();
  ExpectOneLineError(OpenEval({good[0], empty}).status(), {empty, "no records"});
  const std::string truncated = dir / "part-truncated";
  std::filesystem::copy_file(good[0], truncated);
  std::filesystem::resize_file(truncated, std::filesystem::file_size(good[0]) - 3);
  ExpectOneLineError(OpenEval({truncated}).status(), {truncated, "truncated record at byte"});
  ExpectOneLineError(OpenEval({dir / "part-missing"}).status(), {dir / "part-missing"});
  ExpectOneLineError(OpenEval({dir.path()}).status(), {dir.path(), "not a regular file"});
  const std::string fifo = dir / "part-fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  ExpectOneLineError(OpenEval({fifo}).status(), {fifo, "not a regular file"});

  // Options that cannot work.
  EXPECT_FALSE(BertLoader::Open({.files = good, .rank = 2, .world_size = 2}).ok());
  ExpectOneLineError(
      BertLoader::Open({.files = good, .batch_size = 4, .world_size = 3, .shape = kShape}).status(),
      {good[0], "do not fill one batch"});
}

// Training batches of one rank: the sample numbers of `batches` batches.
std::vector<std::vector<int32_t>> TrainSamples(const std::vector<std::string>& files, int rank,
                                               int world, int batch, uint64_t seed, int64_t batches,
                                               int threads, std::vector<int64_t>* epochs = nullptr,
                                               const std::string& index_file = "") {
  absl::StatusOr<std::unique_ptr<BertLoader>> loader = BertLoader::Open({.files = files,
                                                                         .batch_size = batch,
                                                                         .rank = rank,
                                                                         .world_size = world,
                                                                         .seed = seed,
                                                                         .shape = kShape,
                                                                         .threads = threads,
                                                                         .index_file = index_file});
  EXPECT_TRUE(loader.ok()) << loader.status();
  std::vector<std::vector<int32_t>> out;
  BertBatch b;
  for (int64_t k = 0; k < batches; ++k) {
    absl::StatusOr<bool> more = (*loader)->Next(&b);
    EXPECT_TRUE(more.ok() && *more);
    EXPECT_EQ(b.batch_size, batch);
    EXPECT_EQ(b.count, batch);
    std::vector<int32_t> ids;
    for (int64_t i = 0; i < batch; ++i) {
      ids.push_back(b.input_ids[i * kShape.seq_len + 1]);
      // The rest of the row is that sample's, too.
      EXPECT_EQ(b.masked_lm_ids[i * kShape.max_predictions], ids.back());
      EXPECT_EQ(b.next_sentence_labels[i], ids.back() % 2);
      EXPECT_EQ(b.input_mask[i * kShape.seq_len + kShape.seq_len - 1], 0.0f);
    }
    out.push_back(ids);
    if (epochs != nullptr) epochs->push_back(b.epoch);
  }
  return out;
}

TEST(BertLoaderTest, TrainingShardsEachEpochOverRanksWithoutDuplicates) {
  TempDir dir("bert_train");
  const int64_t total = 100;
  const std::vector<std::string> files = WriteNumbered(dir, total, 3);
  const int world = 3, batch = 4;  // global batch 12: 8 per epoch, 4 samples dropped
  EXPECT_EQ(BertSamplesPerEpoch(total, world, batch), 96);
  const uint64_t seed = 5;
  for (int64_t epoch = 0; epoch < 2; ++epoch) {
    std::multiset<int32_t> seen;
    for (int r = 0; r < world; ++r) {
      std::vector<int64_t> epochs;
      const auto batches = TrainSamples(files, r, world, batch, seed, 8 * (epoch + 1), 1, &epochs);
      EXPECT_EQ(epochs[8 * epoch], epoch);
      EXPECT_EQ(epochs.back(), epoch);
      for (int64_t k = 8 * epoch; k < 8 * (epoch + 1); ++k)
        seen.insert(batches[k].begin(), batches[k].end());
    }
    EXPECT_EQ(seen.size(), 96u);
    EXPECT_EQ(std::set<int32_t>(seen.begin(), seen.end()).size(), 96u) << "a sample twice";
    // Exactly the permutation's tail is left out.
    const std::vector<int64_t> perm = EpochPermutation(total, seed, epoch);
    for (int64_t i = 0; i < total; ++i)
      EXPECT_EQ(seen.count(static_cast<int32_t>(perm[i])), i < 96 ? 1u : 0u) << i;
  }
  // Deterministic for a seed whatever the thread count; the next epoch and
  // another seed differ.
  const auto a = TrainSamples(files, 1, world, batch, seed, 16, 1);
  EXPECT_EQ(TrainSamples(files, 1, world, batch, seed, 16, 3), a);
  EXPECT_NE(TrainSamples(files, 1, world, batch, seed + 1, 16, 1), a);
  EXPECT_NE(std::vector(a.begin(), a.begin() + 8), std::vector(a.begin() + 8, a.end()));
}

// The index file written once stands in for walking every shard: the same
// batches, and what it says rather than what walking would find.
TEST(BertLoaderTest, AnIndexFileStandsInForWalkingTheShards) {
  TempDir data("bert_index_data"), cache("bert_index_cache");
  const std::vector<std::string> files = WriteNumbered(data, 40, 3);
  const std::string index_file = cache / "train.idx";
  const auto walked = TrainSamples(files, 0, 2, 4, 9, 6, 1);
  EXPECT_EQ(TrainSamples(files, 0, 2, 4, 9, 6, 1, nullptr, index_file), walked);  // writes it
  ASSERT_TRUE(std::filesystem::exists(index_file));
  EXPECT_EQ(TrainSamples(files, 0, 2, 4, 9, 6, 2, nullptr, index_file), walked);  // reads it
  absl::StatusOr<DatasetIndex> index = ReadIndexFile(index_file, data.path(), Split::kTrain);
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(index->files, files);
  EXPECT_EQ(index->entries.size(), 40u);
  index->entries.resize(32);
  ASSERT_TRUE(WriteIndexFile(*index, data.path(), Split::kTrain, index_file).ok());
  absl::StatusOr<std::unique_ptr<BertLoader>> loader = BertLoader::Open(
      {.files = files, .batch_size = 4, .shape = kShape, .index_file = index_file});
  ASSERT_TRUE(loader.ok()) << loader.status();
  EXPECT_EQ((*loader)->size(), 32);
  // CheckBertData counts from the index directory's files too.
  std::vector<std::string> eval_records;
  for (int i = 0; i < 5; ++i) eval_records.push_back(MakePretrainingExample(Sample(i)));
  WriteShard(data / "eval_10k", eval_records);
  const BertFiles listed{.train = files, .eval = {data / "eval_10k"}};
  int64_t train = 0, eval = 0;
  ASSERT_TRUE(CheckBertData(listed, kShape, 5, &train, &eval, cache.path()).ok());
  EXPECT_EQ(train, 40);  // eval_10k changed the folder: train.idx was stale, walked again
  EXPECT_EQ(eval, 5);
  ASSERT_TRUE(ReadIndexFile(BertIndexFile(cache.path(), false), data.path(), Split::kVal).ok());
}

TEST(BertLoaderTest, EvaluationScoresEverySampleOnceAcrossRanks) {
  TempDir dir("bert_eval");
  const int64_t total = 100;
  const std::vector<std::string> files = WriteNumbered(dir, total, 2);
  const int world = 3, batch = 8;
  std::multiset<int32_t> seen;
  for (int r = 0; r < world; ++r) {
    absl::StatusOr<std::unique_ptr<BertLoader>> loader = BertLoader::Open({.files = files,
                                                                           .train = false,
                                                                           .batch_size = batch,
                                                                           .rank = r,
                                                                           .world_size = world,
                                                                           .shape = kShape,
                                                                           .threads = 2});
    ASSERT_TRUE(loader.ok()) << loader.status();
    EXPECT_EQ((*loader)->size(), total);
    EXPECT_EQ((*loader)->batches_per_epoch(), 5);  // ceil(ceil(100 / 3) / 8), on every rank
    for (int pass = 0; pass < 2; ++pass) {
      (*loader)->StartEval();
      BertBatch b;
      int64_t batches = 0, real = 0;
      while (true) {
        absl::StatusOr<bool> more = (*loader)->Next(&b);
        ASSERT_TRUE(more.ok()) << more.status();
        if (!*more) break;
        ++batches;
        EXPECT_EQ(b.batch_size, batch);
        for (int64_t i = 0; i < batch; ++i) {
          const int32_t* ids = b.input_ids + i * kShape.seq_len;
          const float* weights = b.masked_lm_weights + i * kShape.max_predictions;
          if (i < b.count) {
            if (pass == 0) seen.insert(ids[1]);
            EXPECT_EQ(ids[1] % world, r);  // strided share
            EXPECT_EQ(weights[0], 1.0f);
          } else {
            EXPECT_TRUE(std::all_of(ids, ids + kShape.seq_len, [](int32_t v) { return v == 0; }));
            EXPECT_TRUE(std::all_of(weights, weights + kShape.max_predictions,
                                    [](float w) { return w == 0.0f; }));
            EXPECT_EQ(b.input_mask[i * kShape.seq_len], 0.0f);
          }
        }
        real += b.count;
      }
      EXPECT_EQ(batches, 5);
      EXPECT_EQ(real, r == 0 ? 34 : 33);
      absl::StatusOr<bool> after = (*loader)->Next(&b);
      EXPECT_TRUE(after.ok() && !*after);
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(total));
  for (int32_t i = 0; i < total; ++i) EXPECT_EQ(seen.count(i), 1u) << i;
}

TEST(BertDataFilesTest, ListsAndChecksADirectory) {
  TempDir dir("bert_list");
  ExpectOneLineError(ListBertData(dir.path()).status(), {dir.path(), "no training shards"});
  WriteNumbered(dir, 30, 2);  // part-00000, part-00001
  std::filesystem::rename(dir / "part-00000", dir / "part-00000-of-00002");
  std::filesystem::rename(dir / "part-00001", dir / "part-00001-of-00002");
  ExpectOneLineError(ListBertData(dir.path()).status(), {dir.path(), "no evaluation file"});
  std::vector<std::string> eval_records;
  for (int i = 0; i < 7; ++i) eval_records.push_back(MakePretrainingExample(Sample(i)));
  WriteShard(dir / "eval_10k", eval_records);
  WriteShard(dir / "eval_other", eval_records);
  std::ofstream(dir / "part-00002-of-00002.tmp").close();  // a writer's leftover
  std::ofstream(dir / "README").close();
  absl::StatusOr<BertFiles> files = ListBertData(dir.path());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->train,
            (std::vector<std::string>{dir / "part-00000-of-00002", dir / "part-00001-of-00002"}));
  EXPECT_EQ(files->eval, std::vector<std::string>{dir / "eval_10k"});
  int64_t train = 0, eval = 0;
  ASSERT_TRUE(CheckBertData(*files, kShape, 7, &train, &eval).ok());
  EXPECT_EQ(train, 30);
  EXPECT_EQ(eval, 7);
  ExpectOneLineError(CheckBertData(*files, kShape, 10000, nullptr, nullptr),
                     {dir / "eval_10k", "7 evaluation samples, expected 10000"});
  ExpectOneLineError(
      CheckBertData(*files, {.seq_len = 512, .max_predictions = 76}, 0, nullptr, nullptr),
      {dir / "part-00000-of-00002:0", "feature input_ids", "expected 512"});
  const std::string imagenet = dir / "part-00003-of-00004";
  WriteShard(imagenet, {MakeImageExample("jpeg", 1)});
  files = ListBertData(dir.path());
  ASSERT_TRUE(files.ok());
  ExpectOneLineError(CheckBertData(*files, kShape, 0, nullptr, nullptr),
                     {imagenet + ":0", "input_ids", "missing"});
  std::filesystem::remove(imagenet);
  // Without eval_10k, every eval* file; a directory where a file should be.
  std::filesystem::remove(dir / "eval_10k");
  files = ListBertData(dir.path());
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->eval, std::vector<std::string>{dir / "eval_other"});
  std::filesystem::create_directory(dir / "part-00005-of-00005");
  ExpectOneLineError(ListBertData(dir.path()).status(),
                     {dir / "part-00005-of-00005", "not a regular file"});
  std::filesystem::remove(dir / "part-00005-of-00005");
  ASSERT_EQ(::mkfifo((dir / "eval_10k").c_str(), 0600), 0);
  ExpectOneLineError(ListBertData(dir.path()).status(), {dir / "eval_10k", "not a regular file"});
}

TEST(GeneratedBertTest, WritesTheSchemaWithTheLanguagesStatistics) {
  TempDir dir("bert_generated");
  GeneratedBertOptions o;
  o.train_samples = 4000;
  o.train_shards = 3;
  o.eval_samples = 1000;
  ASSERT_TRUE(WriteGeneratedBertData(dir.path(), o).ok());
  absl::StatusOr<BertFiles> files = ListBertData(dir.path());
  ASSERT_TRUE(files.ok()) << files.status();
  EXPECT_EQ(files->train,
            (std::vector<std::string>{dir / "part-00000-of-00003", dir / "part-00001-of-00003",
                                      dir / "part-00002-of-00003"}));
  EXPECT_EQ(files->eval, std::vector<std::string>{dir / "eval_10k"});
  int64_t train = 0, eval = 0;
  ASSERT_TRUE(CheckBertData(*files, o.shape(), o.eval_samples, &train, &eval).ok());
  EXPECT_EQ(train, 4000);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    EXPECT_NE(entry.path().extension(), ".tmp");

  const GeneratedLanguage lang = MakeGeneratedLanguage(o);
  for (int32_t id = 0; id < o.vocab_size; ++id) {
    const int32_t p = lang.partner[static_cast<size_t>(id)];
    if (id < kFirstSymbolId) {
      EXPECT_EQ(p, -1);
    } else {
      EXPECT_NE(p, id);
      EXPECT_EQ(lang.partner[static_cast<size_t>(p)], id);
    }
  }
  // Every sample, read back through the loader (evaluation order = file order).
  absl::StatusOr<std::unique_ptr<BertLoader>> loader = BertLoader::Open(
      {.files = files->train, .train = false, .batch_size = 64, .shape = o.shape()});
  ASSERT_TRUE(loader.ok()) << loader.status();
  int64_t samples = 0, symbols = 0, predicted = 0, masked = 0, kept = 0, is_next = 0;
  std::set<int32_t> themes;
  BertBatch b;
  while (*(*loader)->Next(&b)) {
    for (int64_t s = 0; s < b.count; ++s, ++samples) {
      const int32_t* ids = b.input_ids + s * o.seq_len;
      const int32_t* seg = b.segment_ids + s * o.seq_len;
      const float* mask = b.input_mask + s * o.seq_len;
      const int32_t* pos = b.masked_lm_positions + s * o.max_predictions;
      const int32_t* lm = b.masked_lm_ids + s * o.max_predictions;
      const float* w = b.masked_lm_weights + s * o.max_predictions;
      // The sentence before masking.
      std::vector<int32_t> tokens(ids, ids + o.seq_len);
      int64_t n = 0;
      while (n < o.seq_len && mask[n] == 1.0f) ++n;
      for (int64_t i = n; i < o.seq_len; ++i) EXPECT_EQ(mask[i] + ids[i] + seg[i], 0);
      ASSERT_EQ(ids[0], kClsId);
      ASSERT_EQ(ids[n - 1], kSepId);
      int64_t k = 0;
      for (; k < o.max_predictions && w[k] == 1.0f; ++k) {
        if (k > 0) {
          EXPECT_LT(pos[k - 1], pos[k]);  // sorted, distinct
        }
        EXPECT_GE(lm[k], kFirstSymbolId);
        masked += ids[pos[k]] == kMaskId;
        kept += ids[pos[k]] == lm[k];
        tokens[static_cast<size_t>(pos[k])] = lm[k];
      }
      for (int64_t j = k; j < o.max_predictions; ++j) EXPECT_EQ(pos[j] + lm[j] + w[j], 0);
      // Python's round(): halves to even (n = 30 gives 4).
      EXPECT_EQ(
          k, std::min<int64_t>(o.max_predictions, static_cast<int64_t>(std::nearbyint(0.15 * n))));
      predicted += k;
      // Sentence A repeats a, B repeats b; b = P(a) exactly for IsNext.
      int64_t sep = 1;
      while (tokens[static_cast<size_t>(sep)] != kSepId) ++sep;
      ASSERT_GE(sep, 4);
      ASSERT_LE(sep, n - 5);
      const int32_t a = tokens[1], b_theme = tokens[static_cast<size_t>(sep + 1)];
      for (int64_t i = 1; i < n - 1; ++i) {
        if (i == sep) continue;
        ++symbols;
        EXPECT_EQ(tokens[static_cast<size_t>(i)], i < sep ? a : b_theme) << s << " " << i;
        EXPECT_EQ(seg[i], i > sep ? 1 : 0);
      }
      const int32_t label = b.next_sentence_labels[s];
      is_next += label == 0;
      EXPECT_EQ(lang.partner[static_cast<size_t>(a)] == b_theme, label == 0);
      themes.insert(a);
    }
  }
  EXPECT_EQ(samples, 4000);
  EXPECT_EQ(themes.size(), static_cast<size_t>(o.vocab_size - kFirstSymbolId));
  // About 15% of the tokens (rounded per sample), 80% [MASK], 10% kept
  // (plus the random draws that hit the original, 1/60 of 10%).
  const double fraction = static_cast<double>(predicted) / static_cast<double>(symbols);
  EXPECT_NEAR(fraction, 0.17, 0.02);  // 15% of all tokens, [CLS] and [SEP]s included
  EXPECT_NEAR(static_cast<double>(masked) / predicted, 0.8, 0.02);
  EXPECT_NEAR(static_cast<double>(kept) / predicted, 0.1 + 0.1 / 60, 0.015);
  EXPECT_NEAR(static_cast<double>(is_next) / samples, 0.5, 0.03);

  // The name changes with the options; the data with the seed.
  GeneratedBertOptions other = o;
  other.seq_len = 64;
  EXPECT_NE(other.Name(), o.Name());
  other = o;
  other.seed = 2;
  EXPECT_NE(other.Name(), o.Name());
  EXPECT_NE(GenerateBertSample(other, MakeGeneratedLanguage(other), true, 0).input_ids,
            GenerateBertSample(o, lang, true, 0).input_ids);
  EXPECT_EQ(GenerateBertSample(o, lang, true, 0).input_ids,
            GenerateBertSample(o, lang, true, 0).input_ids);
  o.vocab_size = 63;  // an odd number of symbols
  ExpectOneLineError(WriteGeneratedBertData(dir / "bad", o), {"vocab 63"});
}

}  // namespace
}  // namespace mlperf::datasets::bert
