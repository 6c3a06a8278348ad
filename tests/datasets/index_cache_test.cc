// Index files (datasets/index_cache.h) on tiny generated sets: they give
// back the index they were written from, in both formats and splits; a
// changed shard or folder, another root or split and a damaged file are
// never used; and the loader reads a current file instead of indexing.
#include "datasets/index_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "datasets/image_loader.h"
#include "datasets/synthetic_image_set.h"
#include "tests/datasets/test_dir.h"

namespace mlperf::datasets {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

SyntheticImageSetOptions TinySet(int shards) {
  return {.num_classes = 4,
          .train_per_class = 5,
          .val_per_class = 2,
          .image_size = 20,
          .seed = 5,
          .tfrecord_shards = shards};
}

void ExpectSameIndex(const DatasetIndex& a, const DatasetIndex& b) {
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.files, b.files);
  EXPECT_EQ(a.class_names, b.class_names);
  EXPECT_EQ(a.num_classes, b.num_classes);
  ASSERT_EQ(a.entries.size(), b.entries.size());
  for (size_t i = 0; i < a.entries.size(); ++i) {
    EXPECT_EQ(a.entries[i].file, b.entries[i].file) << i;
    EXPECT_EQ(a.entries[i].label, b.entries[i].label) << i;
    EXPECT_EQ(a.entries[i].offset, b.entries[i].offset) << i;
    EXPECT_EQ(a.entries[i].length, b.entries[i].length) << i;
  }
}

absl::StatusOr<DatasetIndex> Fresh(const std::string& root, Split split) {
  absl::StatusOr<DatasetFormat> format = DetectFormat(root);
  if (!format.ok()) return format.status();
  return *format == DatasetFormat::kImageFolder ? IndexImageFolder(root, split)
                                                : IndexTfRecords(root, split, 0);
}

TEST(IndexCacheTest, GivesBackTheIndexInBothFormatsAndSplits) {
  TempDir dir("index_roundtrip");
  for (int shards : {0, 3}) {
    const std::string form = shards == 0 ? "folder" : "tfrecord", root = dir / form;
    ASSERT_TRUE(WriteSyntheticImageSet(root, TinySet(shards)).ok());
    for (Split split : {Split::kTrain, Split::kVal}) {
      const absl::StatusOr<DatasetIndex> fresh = Fresh(root, split);
      ASSERT_TRUE(fresh.ok()) << fresh.status();
      const std::string file = dir / (form + (split == Split::kTrain ? ".train" : ".val"));
      ASSERT_TRUE(WriteIndexFile(*fresh, root, split, file).ok());
      const absl::StatusOr<DatasetIndex> read = ReadIndexFile(file, root, split);
      ASSERT_TRUE(read.ok()) << read.status();
      ExpectSameIndex(*read, *fresh);
      // Another split, or another root, is not this file's index.
      const Split other = split == Split::kTrain ? Split::kVal : Split::kTrain;
      EXPECT_TRUE(absl::IsFailedPrecondition(ReadIndexFile(file, root, other).status()));
      EXPECT_TRUE(absl::IsFailedPrecondition(ReadIndexFile(file, dir.path(), split).status()));
    }
  }
}

TEST(IndexCacheTest, AChangedShardIsCaughtNotHiddenByTheFile) {
  TempDir dir("index_shard");
  const std::string root = dir / "set", file = dir / "train.idx";
  ASSERT_TRUE(WriteSyntheticImageSet(root, TinySet(2)).ok());
  ASSERT_TRUE(CachedIndex(root, DatasetFormat::kAuto, Split::kTrain, 0, file).ok());
  ASSERT_TRUE(ReadIndexFile(file, root, Split::kTrain).ok());
  std::string shard;
  for (const fs::directory_entry& e : fs::directory_iterator(root))
    if (e.path().filename().string().starts_with("train-")) shard = e.path().string();
  ASSERT_FALSE(shard.empty());
  std::ofstream(shard, std::ios::app) << "x";  // now ends inside a record
  const absl::Status stale = ReadIndexFile(file, root, Split::kTrain).status();
  EXPECT_TRUE(absl::IsFailedPrecondition(stale)) << stale;
  EXPECT_NE(stale.message().find(shard), std::string::npos) << stale;
  // Indexed afresh, the damage is reported with the shard's name.
  const absl::Status reindexed =
      CachedIndex(root, DatasetFormat::kAuto, Split::kTrain, 0, file).status();
  EXPECT_FALSE(reindexed.ok());
  EXPECT_NE(reindexed.message().find(shard), std::string::npos) << reindexed;
}

TEST(IndexCacheTest, AnImageAddedToAFolderRebuildsTheFile) {
  TempDir dir("index_folder");
  const std::string root = dir / "set", file = dir / "train.idx";
  ASSERT_TRUE(WriteSyntheticImageSet(root, TinySet(0)).ok());
  const absl::StatusOr<DatasetIndex> before =
      CachedIndex(root, DatasetFormat::kAuto, Split::kTrain, 0, file);
  ASSERT_TRUE(before.ok()) << before.status();
  const fs::path first = before->files.front();
  fs::copy_file(first, first.parent_path() / "added.JPEG");
  EXPECT_TRUE(absl::IsFailedPrecondition(ReadIndexFile(file, root, Split::kTrain).status()));
  const absl::StatusOr<DatasetIndex> after =
      CachedIndex(root, DatasetFormat::kAuto, Split::kTrain, 0, file);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->entries.size(), before->entries.size() + 1);
  const absl::StatusOr<DatasetIndex> reread = ReadIndexFile(file, root, Split::kTrain);
  ASSERT_TRUE(reread.ok()) << reread.status();  // rewritten, current again
  ExpectSameIndex(*reread, *after);
}

TEST(IndexCacheTest, ADamagedFileIsNeverUsed) {
  TempDir dir("index_damaged");
  const std::string root = dir / "set", file = dir / "val.idx";
  ASSERT_TRUE(WriteSyntheticImageSet(root, TinySet(2)).ok());
  const absl::StatusOr<DatasetIndex> fresh = Fresh(root, Split::kVal);
  ASSERT_TRUE(fresh.ok());
  ASSERT_TRUE(WriteIndexFile(*fresh, root, Split::kVal, file).ok());
  std::string bytes;
  {
    std::ifstream in(file, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  const auto write = [&](const std::string& b) {
    std::ofstream(file, std::ios::binary | std::ios::trunc) << b;
  };
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  for (const std::string& damaged :
       {flipped, bytes.substr(0, bytes.size() - 3), bytes.substr(0, 10), std::string()}) {
    write(damaged);
    EXPECT_TRUE(absl::IsDataLoss(ReadIndexFile(file, root, Split::kVal).status()))
        << damaged.size() << " bytes";
    const absl::StatusOr<DatasetIndex> cached =
        CachedIndex(root, DatasetFormat::kAuto, Split::kVal, 0, file);
    ASSERT_TRUE(cached.ok()) << cached.status();
    ExpectSameIndex(*cached, *fresh);
  }
  fs::remove(file);
  EXPECT_TRUE(absl::IsNotFound(ReadIndexFile(file, root, Split::kVal).status()));
}

TEST(IndexCacheTest, TheLoaderReadsACurrentFileInsteadOfIndexing) {
  TempDir dir("index_loader");
  const std::string root = dir / "set", file = dir / "train.idx";
  ASSERT_TRUE(WriteSyntheticImageSet(root, TinySet(3)).ok());
  ImageLoaderOptions o{.root = root, .image_size = 16, .batch_size = 4, .seed = 7};
  // The same batches as a loader that indexes itself...
  const auto first_batch = [](const ImageLoaderOptions& options, int64_t* size) {
    absl::StatusOr<std::unique_ptr<ImageLoader>> loader = ImageLoader::Open(options);
    EXPECT_TRUE(loader.ok()) << loader.status();
    ImageBatch batch;
    if (!loader.ok() || !(*loader)->Next(&batch).ok()) return ImageBatch{};
    *size = (*loader)->size();
    return batch;
  };
  int64_t plain_size = 0, cached_size = 0;
  const ImageBatch plain = first_batch(o, &plain_size);
  o.index_file = file;
  const ImageBatch cached = first_batch(o, &cached_size);  // writes the file
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(cached_size, plain_size);
  EXPECT_EQ(cached.pixels, plain.pixels);
  EXPECT_EQ(cached.labels, plain.labels);
  // ...and what the file says, not what indexing would: a current file
  // holding fewer records gives a smaller set.
  absl::StatusOr<DatasetIndex> index = ReadIndexFile(file, root, Split::kTrain);
  ASSERT_TRUE(index.ok());
  index->entries.resize(index->entries.size() - 4);
  ASSERT_TRUE(WriteIndexFile(*index, root, Split::kTrain, file).ok());
  first_batch(o, &cached_size);
  EXPECT_EQ(cached_size, plain_size - 4);
}

// A record index (BERT's shards) larger than the 1 MiB write and read
// buffers: streamed out and back record for record, per file; another file
// list, a changed shard or a damaged byte means walking again.
TEST(IndexCacheTest, ARecordIndexIsStreamedBothWaysPerFile) {
  TempDir dir("index_records");
  const std::string root = dir / "shards", file = dir / "train.idx";
  fs::create_directories(root);
  std::vector<std::string> files;
  for (int f = 0; f < 3; ++f) {
    files.push_back(root + "/part-" + std::to_string(f));
    std::ofstream(files.back()) << "shard " << f;
  }
  int walks = 0;
  // 40,000 to 60,000 made-up records a file: about 3.6 MB of index in all.
  const RecordWalker walk = [&](const std::string& path) {
    ++walks;
    const uint64_t f = static_cast<uint64_t>(path.back() - '0');
    std::vector<TfRecordLocation> records(40000 + 10000 * f);
    for (uint64_t i = 0; i < records.size(); ++i)
      records[i] = {i * 1000 + f, 100 + (i * 7 + f) % 900};
    return absl::StatusOr<std::vector<TfRecordLocation>>(std::move(records));
  };
  const auto same = [](const RecordIndex& a, const RecordIndex& b) {
    if (a.files != b.files || a.records.size() != b.records.size()) return false;
    for (size_t f = 0; f < a.records.size(); ++f) {
      if (a.records[f].size() != b.records[f].size()) return false;
      for (size_t i = 0; i < a.records[f].size(); ++i)
        if (a.records[f][i].offset != b.records[f][i].offset ||
            a.records[f][i].length != b.records[f][i].length)
          return false;
    }
    return true;
  };
  const absl::StatusOr<RecordIndex> walked = IndexRecordFiles(files, walk, 2);
  ASSERT_TRUE(walked.ok());
  EXPECT_EQ(walked->size(), 150000);
  walks = 0;
  const absl::StatusOr<RecordIndex> first =
      CachedRecordIndex(root, Split::kTrain, files, walk, 2, file);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(walks, 3);
  EXPECT_GT(fs::file_size(file), 3u << 20);
  const absl::StatusOr<RecordIndex> read =
      CachedRecordIndex(root, Split::kTrain, files, walk, 2, file);
  ASSERT_TRUE(read.ok());
  EXPECT_EQ(walks, 3) << "a current file must be read, not walked again";
  EXPECT_TRUE(same(*read, *walked));
  // Another list of files: walked, and the file rewritten for it.
  const std::vector<std::string> two(files.begin(), files.begin() + 2);
  const absl::StatusOr<RecordIndex> other =
      CachedRecordIndex(root, Split::kTrain, two, walk, 2, file);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(walks, 5);
  EXPECT_EQ(other->size(), 90000);
  // A damaged byte deep in the entries: walked again, never read as records.
  {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    const auto middle = static_cast<std::streamoff>(fs::file_size(file) / 2);
    f.seekg(middle);
    const char byte = static_cast<char>(f.get() ^ 0x10);
    f.seekp(middle);
    f.put(byte);
  }
  const absl::StatusOr<RecordIndex> again =
      CachedRecordIndex(root, Split::kTrain, two, walk, 2, file);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(walks, 7);
  EXPECT_EQ(again->size(), 90000);
}

}  // namespace
}  // namespace mlperf::datasets
