// The TensorFlow checkpoint reader against bundles TensorFlow wrote itself
// (tests/bert/fixtures, from make_tf_checkpoint_fixture.py): every tensor
// equals what TensorFlow read back, over one and three shards, every dtype
// BERT might hold and TF2's object-based names. Our writer's files read
// back bit for bit (and in TensorFlow, where a Python with TensorFlow is
// found). Damaged files give one-line errors naming the file and tensor.
#include "reference/io/tf_checkpoint.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "base/environment.h"
#include "fmt/format.h"
#include "reference/io/safetensors.h"
#include "reference/io/sstable.h"

#ifndef MLPERF_SOURCE_DIR
#error "MLPERF_SOURCE_DIR must point at the repository root"
#endif

namespace mlperf::io {

using base::Crc32c;
using base::Crc32cExtend;
using base::MaskCrc32c;
using base::UnmaskCrc32c;
namespace {

namespace fs = std::filesystem;
using core::DType;
using core::Tensor;

const std::string kFixtures = std::string(MLPERF_SOURCE_DIR) + "/tests/bert/fixtures";
const std::string kTinyBert = kFixtures + "/tiny_bert/model.ckpt-28252";
const std::string kSharded = kFixtures + "/dtypes/sharded";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A fresh directory per test, removed afterwards.
class TempDir {
 public:
  explicit TempDir(const std::string& name)
      : path_(fs::temp_directory_path() / fmt::format("tf_ckpt_{}_{}", name, ::getpid())) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// Copies the checkpoint at `prefix` (index and shards) to `to` (a prefix).
void CopyCheckpoint(const std::string& prefix, const std::string& to) {
  const fs::path from(prefix);
  for (const fs::directory_entry& e : fs::directory_iterator(from.parent_path())) {
    const std::string name = e.path().filename().string();
    if (name.starts_with(from.filename().string() + "."))
      fs::copy_file(e.path(), to + name.substr(from.filename().string().size()));
  }
}

// The stored bytes of `name` as `file` (safetensors) holds them.
std::string ExpectedBytes(const SafetensorsFile& file, const std::string& name) {
  const StoredTensor& t = file.tensors().at(name);
  std::string bytes(t.end - t.begin, '\0');
  EXPECT_TRUE(file.CopyTo(name, Tensor(bytes.data(), t.shape, t.dtype)).ok()) << name;
  return bytes;
}

// Every tensor of `expected` read from the checkpoint in its stored dtype
// equals TensorFlow's bytes, and the checkpoint has no other readable tensor.
void ExpectAllTensorsEqual(const std::string& prefix, const std::string& expected_path) {
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(prefix);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  absl::StatusOr<SafetensorsFile> expected = SafetensorsFile::Read(expected_path);
  ASSERT_TRUE(expected.ok()) << expected.status();
  ASSERT_FALSE(expected->tensors().empty());
  for (const auto& [name, stored] : expected->tensors()) {
    auto it = ckpt->entries().find(name);
    ASSERT_NE(it, ckpt->entries().end()) << name;
    EXPECT_EQ(it->second.dtype, stored.dtype) << name;
    EXPECT_EQ(it->second.shape.ToString(), stored.shape.ToString()) << name;
    std::string got(stored.end - stored.begin, '\x55');
    absl::Status s = ckpt->CopyTo(name, Tensor(got.data(), stored.shape, stored.dtype));
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(got, ExpectedBytes(*expected, name)) << name;
  }
  for (const auto& [name, info] : ckpt->entries()) {
    if (info.dtype && info.slices == 0 && !name.starts_with(std::string(1, '\0'))) {
      EXPECT_EQ(expected->tensors().count(name), 1u) << name << " read but not expected";
    }
  }
}

TEST(Crc32cTest, KnownValuesAndMask) {
  EXPECT_EQ(Crc32c("123456789", 9), 0xe3069283u);  // the CRC-32C check value
  std::string zeros(32, '\0');
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8a9136aau);  // RFC 3720, B.4
  // Odd lengths and a split crossing the 8-byte steps agree with one pass.
  std::string text = "The quick brown fox jumps over the lazy dog, again and again.";
  const uint32_t whole = Crc32c(text.data(), text.size());
  EXPECT_EQ(Crc32cExtend(Crc32c(text.data(), 13), text.data() + 13, text.size() - 13), whole);
  EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(whole)), whole);
  EXPECT_EQ(MaskCrc32c(0), 0xa282ead8u);  // what TensorFlow stores for an empty tensor
}

TEST(TfCheckpointTest, ReadsTheTinyBertTensorFlowWrote) {
  ExpectAllTensorsEqual(kTinyBert, kFixtures + "/tiny_bert_expected.safetensors");
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(kTinyBert);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->num_shards(), 1);
  const TfTensorInfo& kernel = ckpt->entries().at("bert/encoder/layer_0/intermediate/dense/kernel");
  EXPECT_EQ(kernel.tf_dtype, 1);
  EXPECT_EQ(kernel.shape, (core::Shape{32, 64}));
  EXPECT_EQ(kernel.size, 32u * 64u * 4u);
  int64_t step = 0;
  ASSERT_TRUE(ckpt->CopyTo("global_step", Tensor(&step, core::Shape{}, DType::kI64)).ok());
  EXPECT_EQ(step, 28252);
  EXPECT_EQ(ckpt->entries().count("bert/embeddings/word_embeddings/adam_m"), 1u);
}

TEST(TfCheckpointTest, ReadsThreeShardsOfEveryDtype) {
  ExpectAllTensorsEqual(kSharded, kFixtures + "/dtypes_expected.safetensors");
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(kSharded);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->num_shards(), 3);
  EXPECT_EQ(ckpt->entries().at("shard0/float32").shard, 0);
  EXPECT_EQ(ckpt->entries().at("shard1/float16").shard, 1);
  EXPECT_EQ(ckpt->entries().at("shard2/bfloat16").shard, 2);
  EXPECT_EQ(ckpt->ShardPath(2), kSharded + ".data-00002-of-00003");
}

TEST(TfCheckpointTest, WidensHalfAndBfloat16ToFp32Exactly) {
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(kSharded);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  absl::StatusOr<SafetensorsFile> expected =
      SafetensorsFile::Read(kFixtures + "/dtypes_expected.safetensors");
  ASSERT_TRUE(expected.ok()) << expected.status();
  for (const std::string name : {"shard1/float16", "shard2/bfloat16"}) {
    const StoredTensor& t = expected->tensors().at(name);
    std::vector<uint16_t> narrow(static_cast<size_t>(t.shape.numel()));
    ASSERT_TRUE(expected->CopyTo(name, Tensor(narrow.data(), t.shape, t.dtype)).ok());
    std::vector<float> wide(narrow.size(), -1.0f);
    absl::Status s = ckpt->CopyTo(name, Tensor(wide.data(), t.shape, DType::kF32));
    ASSERT_TRUE(s.ok()) << s;
    bool any_fraction = false;
    for (size_t i = 0; i < narrow.size(); ++i) {
      const float want =
          t.dtype == DType::kF16 ? core::HalfToFloat(narrow[i]) : core::Bf16ToFloat(narrow[i]);
      EXPECT_EQ(wide[i], want) << name << "[" << i << "]";
      any_fraction |= want != static_cast<float>(static_cast<int>(want));
    }
    EXPECT_TRUE(any_fraction) << name << " should not be all integers";
  }
}

TEST(TfCheckpointTest, ReadsTf2ObjectBasedCheckpoints) {
  // tf.train.Checkpoint's names, beside the object graph stored as a string.
  ExpectAllTensorsEqual(kFixtures + "/tf2/ckpt", kFixtures + "/tf2_expected.safetensors");
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(kFixtures + "/tf2/ckpt");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->entries().at("_CHECKPOINTABLE_OBJECT_GRAPH").tf_dtype, 7);
  EXPECT_FALSE(ckpt->entries().at("_CHECKPOINTABLE_OBJECT_GRAPH").dtype.has_value());
}

TEST(TfCheckpointTest, RefusesWhatItCannotReadByName) {
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(kSharded);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  std::vector<float> buf(64);
  auto error = [&](const std::string& name, core::Shape shape, DType dtype = DType::kF32) {
    absl::Status s = ckpt->CopyTo(name, Tensor(buf.data(), shape, dtype));
    EXPECT_FALSE(s.ok()) << name;
    return std::string(s.message());
  };
  const std::string index = kSharded + ".index";
  EXPECT_EQ(error("shard2/string", {2}), index +
                                             ": tensor \"shard2/string\" has dtype string, which "
                                             "this reader does not support");
  EXPECT_EQ(error("shard2/bool", {3}), index +
                                           ": tensor \"shard2/bool\" has dtype bool, which this "
                                           "reader does not support");
  EXPECT_NE(error("shard1/float64", {2}).find("float64"), std::string::npos);
  EXPECT_EQ(error("partitioned", {4, 3}),
            index +
                ": tensor \"partitioned\" is a partitioned variable (2 slices); only whole "
                "tensors are supported");
  EXPECT_EQ(error("bert/missing", {1}), index + ": no tensor \"bert/missing\"");
  EXPECT_EQ(error("shard0/float32", {5, 3}),
            index + ": tensor \"shard0/float32\": expected F32 [5, 3], found float32 [3, 5]");
  EXPECT_EQ(error("shard1/int32", {7}),
            index + ": tensor \"shard1/int32\": expected F32 [7], found int32 [7]");
}

// The damaged copies below each fail with the file and, where there is one,
// the tensor in a single line.
class DamagedCheckpointTest : public ::testing::Test {
 protected:
  DamagedCheckpointTest() : dir_("damaged") { CopyCheckpoint(kSharded, prefix_); }

  std::string OpenError() {
    absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(prefix_);
    EXPECT_FALSE(ckpt.ok());
    const std::string message = ckpt.ok() ? "" : std::string(ckpt.status().message());
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    return message;
  }
  std::string ReadError(const std::string& name, core::Shape shape) {
    absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(prefix_);
    EXPECT_TRUE(ckpt.ok()) << ckpt.status();
    if (!ckpt.ok()) return "";
    std::vector<float> buf(static_cast<size_t>(shape.numel()));
    absl::Status s = ckpt->CopyTo(name, Tensor(buf.data(), shape, DType::kF32));
    EXPECT_FALSE(s.ok());
    return std::string(s.message());
  }
  void Edit(const std::string& path, const std::function<void(std::string&)>& edit) {
    std::string bytes = ReadFile(path);
    edit(bytes);
    WriteFile(path, bytes);
  }

  TempDir dir_;
  const std::string prefix_ = dir_ / "ckpt";
  const std::string index_ = prefix_ + ".index";
};

TEST_F(DamagedCheckpointTest, FlippedIndexByteFailsTheBlockChecksum) {
  Edit(index_, [](std::string& b) { b[40] ^= 0x01; });  // inside the data block
  EXPECT_EQ(OpenError(), index_ + ": data block at offset 0: checksum mismatch");
}

TEST_F(DamagedCheckpointTest, TruncatedIndex) {
  Edit(index_, [](std::string& b) { b.resize(b.size() - 7); });
  EXPECT_EQ(OpenError(),
            index_ + ": no table magic number at the end: not a TensorFlow .index file?");
  Edit(index_, [](std::string& b) { b.resize(20); });
  EXPECT_EQ(OpenError(),
            index_ + ": shorter (20 bytes) than the 48-byte table footer: truncated file?");
  WriteFile(index_, "");
  EXPECT_NE(OpenError().find("shorter (0 bytes)"), std::string::npos);
}

TEST_F(DamagedCheckpointTest, IndexCutBeforeTheFooterKeepsItsMagic) {
  // The last 48 bytes intact, the blocks before them cut away.
  Edit(index_, [](std::string& b) { b = b.substr(b.size() - 60); });
  EXPECT_NE(OpenError().find("past the end of the table (60 bytes): truncated file?"),
            std::string::npos);
}

TEST_F(DamagedCheckpointTest, BadMagic) {
  Edit(index_, [](std::string& b) { b[b.size() - 1] ^= 0x40; });
  EXPECT_EQ(OpenError(),
            index_ + ": no table magic number at the end: not a TensorFlow .index file?");
}

TEST_F(DamagedCheckpointTest, CompressedBlocksAreRefused) {
  // Mark the data block snappy-compressed and re-seal its checksum, as a
  // LevelDB writer with compression on would.
  Edit(index_, [](std::string& b) {
    const size_t size = 403;  // the fixture's data block: offset 0, its trailer sealed below
    uint32_t crc = MaskCrc32c(Crc32c(b.data(), size + 1));
    ASSERT_EQ(b[size], '\0');
    ASSERT_EQ(std::memcmp(b.data() + size + 1, &crc, 4), 0) << "the fixture's layout changed";
    b[size] = 1;
    crc = MaskCrc32c(Crc32c(b.data(), size + 1));
    std::memcpy(b.data() + size + 1, &crc, 4);
  });
  EXPECT_EQ(OpenError(), index_ +
                             ": data block at offset 0 is compressed (type 1, snappy); only "
                             "TensorFlow's uncompressed tables are supported");
}

TEST_F(DamagedCheckpointTest, MissingShard) {
  fs::remove(prefix_ + ".data-00001-of-00003");
  EXPECT_EQ(OpenError(),
            prefix_ + ".data-00001-of-00003: missing shard 1 of 3 (No such file or directory)");
}

TEST_F(DamagedCheckpointTest, ShardCutShort) {
  const std::string shard = prefix_ + ".data-00000-of-00003";
  Edit(shard, [](std::string& b) { b.resize(b.size() - 1); });
  EXPECT_EQ(OpenError(), shard +
                             ": tensor \"shard0/int64_scalar\" ends at byte 116 but the shard "
                             "has 115 bytes: truncated file?");
}

TEST_F(DamagedCheckpointTest, ShardCutAfterOpeningFailsTheRead) {
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(prefix_);
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  const std::string shard = prefix_ + ".data-00000-of-00003";
  Edit(shard, [](std::string& b) { b.resize(50); });
  std::vector<float> buf(15);
  absl::Status s = ckpt->CopyTo("shard0/float32", Tensor(buf.data(), {3, 5}, DType::kF32));
  EXPECT_EQ(s.message(), shard +
                             ": tensor \"shard0/float32\" bytes [48, 108) lie past the end of "
                             "the shard: truncated file?");
  fs::remove(shard);
  s = ckpt->CopyTo("shard0/float32", Tensor(buf.data(), {3, 5}, DType::kF32));
  EXPECT_NE(std::string(s.message()).find(shard + ": cannot open"), std::string::npos) << s;
}

TEST_F(DamagedCheckpointTest, FlippedDataByteFailsTheTensorChecksum) {
  const std::string shard = prefix_ + ".data-00001-of-00003";
  Edit(shard, [](std::string& b) { b[3] ^= 0x10; });  // inside shard1/float16
  const std::string error = ReadError("shard1/float16", {4, 2, 3});
  EXPECT_TRUE(error.starts_with(shard + ": tensor \"shard1/float16\": CRC-32C mismatch")) << error;
  // The other tensors of the shard still read.
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(prefix_);
  ASSERT_TRUE(ckpt.ok());
  std::vector<int32_t> ints(7);
  EXPECT_TRUE(ckpt->CopyTo("shard1/int32", Tensor(ints.data(), {7}, DType::kI32)).ok());
}

TEST_F(DamagedCheckpointTest, EntryPointingPastItsShardOrShardCount) {
  // Rewrite the index with one entry's offset moved out of its shard, and
  // then with a shard id the header does not have, re-sealing the table.
  absl::StatusOr<std::vector<SstableEntry>> table = ReadSstable(index_, ReadFile(index_));
  ASSERT_TRUE(table.ok()) << table.status();
  auto rewrite = [&](const std::string& name, int field, uint8_t value) {
    std::vector<SstableEntry> edited = *table;
    for (SstableEntry& e : edited) {
      if (e.key != name) continue;
      // Append a varint field: protobuf keeps the last value of a scalar.
      e.value.push_back(static_cast<char>(field << 3));
      e.value.push_back(static_cast<char>(value));
    }
    WriteFile(index_, BuildSstable(edited));
  };
  rewrite("shard0/float32", 4, 100);  // offset 100 of 116 bytes
  EXPECT_EQ(OpenError(), prefix_ +
                             ".data-00000-of-00003: tensor \"shard0/float32\" ends at byte 160 "
                             "but the shard has 116 bytes: truncated file?");
  rewrite("shard1/int32", 3, 7);  // shard 7 of 3
  EXPECT_EQ(OpenError(), index_ + ": tensor \"shard1/int32\": shard 7 of a 3-shard checkpoint");
  rewrite("shard1/int32", 5, 12);  // 12 bytes for 7 int32
  EXPECT_EQ(OpenError(), index_ + ": tensor \"shard1/int32\": 12 bytes for int32 [7], expected 28");
  std::vector<SstableEntry> headless(table->begin() + 1, table->end());
  WriteFile(index_, BuildSstable(headless));
  EXPECT_EQ(OpenError(),
            index_ + ": no BundleHeaderProto under the empty name: not a tensor bundle");
}

TEST(TfCheckpointTest, MissingIndex) {
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(kFixtures + "/no/such/model.ckpt");
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().message(),
            kFixtures + "/no/such/model.ckpt.index: cannot open: No such file or directory");
}

// An index that is a FIFO is refused at once and said to be one, never waited
// on or reported as missing.
TEST(TfCheckpointTest, IndexThatIsAFifo) {
  const std::string dir = ::testing::TempDir() + "tf_ckpt_fifo_" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  ASSERT_EQ(mkfifo((dir + "/model.ckpt.index").c_str(), 0600), 0);
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(dir + "/model.ckpt");
  ASSERT_FALSE(ckpt.ok());
  EXPECT_EQ(ckpt.status().message(), dir + "/model.ckpt.index: not a regular file");
  std::filesystem::remove_all(dir);
}

// Tensors of every dtype the writer takes, and sizes from empty to large.
struct WrittenTensors {
  std::vector<float> weights = std::vector<float>(3000);
  std::vector<uint16_t> halves = {0x3c00, 0xc000, 0x7bff, 0x0001};
  std::vector<uint16_t> bf16 = {0x3f80, 0xbf81, 0x7f7f};
  std::vector<int32_t> ints = {-7, 0, 2147483647};
  int64_t step = 28252;
  std::vector<uint8_t> bytes = {0, 255, 17};
  float empty = 0;
  std::vector<NamedTensor> tensors() {
    for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i) * 0.37f - 9.0f;
    return {{"weights", Tensor(weights.data(), {30, 100}, DType::kF32)},
            {"global_step", Tensor(&step, core::Shape{}, DType::kI64)},
            {"a/half", Tensor(halves.data(), {2, 2}, DType::kF16)},
            {"a/bf16", Tensor(bf16.data(), {3}, DType::kBF16)},
            {"a/ints", Tensor(ints.data(), {3, 1}, DType::kI32)},
            {"a/bytes", Tensor(bytes.data(), {3}, DType::kU8)},
            {"a/empty", Tensor(&empty, {0, 5}, DType::kF32)}};
  }
};

TEST(TfCheckpointWriterTest, RoundTripThroughOurReader) {
  TempDir dir("writer");
  WrittenTensors w;
  const std::vector<NamedTensor> tensors = w.tensors();
  ASSERT_TRUE(WriteTfCheckpoint(dir / "model.ckpt", tensors).ok());
  EXPECT_FALSE(fs::exists(dir / "model.ckpt.index.tmp"));
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(dir / "model.ckpt");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->entries().size(), tensors.size());
  for (const NamedTensor& t : tensors) {
    std::string got(t.tensor.bytes(), '\x55');
    absl::Status s = ckpt->CopyTo(t.name, Tensor(got.data(), t.tensor.shape(), t.tensor.dtype()));
    ASSERT_TRUE(s.ok()) << s;
    EXPECT_EQ(std::memcmp(got.data(), t.tensor.data(), got.size()), 0) << t.name;
  }
  EXPECT_EQ(ckpt->entries().at("global_step").tf_dtype, 9);
  EXPECT_EQ(ckpt->entries().at("a/bf16").tf_dtype, 14);
  EXPECT_EQ(ckpt->entries().at("a/half").tf_dtype, 19);
}

TEST(TfCheckpointWriterTest, RefusesDuplicateAndEmptyNames) {
  TempDir dir("writer_bad");
  float x = 1;
  const std::vector<NamedTensor> twice = {{"w", Tensor(&x, {1}, DType::kF32)},
                                          {"w", Tensor(&x, {1}, DType::kF32)}};
  absl::Status s = WriteTfCheckpoint(dir / "ckpt", twice);
  EXPECT_EQ(s.message(), dir / "ckpt.index" + ": tensor \"w\" given twice");
  const std::vector<NamedTensor> unnamed = {{"", Tensor(&x, {1}, DType::kF32)}};
  EXPECT_FALSE(WriteTfCheckpoint(dir / "ckpt", unnamed).ok());
  EXPECT_FALSE(fs::exists(dir / "ckpt.index"));
  EXPECT_FALSE(fs::exists(dir / "ckpt.data-00000-of-00001"));
}

TEST(TfCheckpointWriterTest, ReadsTensorsPastFourGigabytesWithoutLoadingTheShard) {
  // BERT-Large's shard with its optimizer slots is about 4 GB: offsets must
  // be 64-bit and only the tensor's own bytes read. The shard here is sparse.
  TempDir dir("large");
  std::vector<float> w = {1.5f, -2.25f, 3.0f, 1e-20f};
  const std::vector<NamedTensor> tensors = {{"w", Tensor(w.data(), {2, 2}, DType::kF32)}};
  ASSERT_TRUE(WriteTfCheckpoint(dir / "ckpt", tensors).ok());
  const uint64_t offset = uint64_t{5} << 30;
  const std::string index = dir / "ckpt.index", shard = dir / "ckpt.data-00000-of-00001";
  absl::StatusOr<std::vector<SstableEntry>> table = ReadSstable(index, ReadFile(index));
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->back().key, "w");
  // A later offset field (4) overrides the first, as protobuf parses.
  table->back().value.push_back(static_cast<char>(4 << 3));
  for (uint64_t v = offset; v != 0; v >>= 7)
    table->back().value.push_back(static_cast<char>((v & 0x7f) | (v >= 0x80 ? 0x80 : 0)));
  WriteFile(index, BuildSstable(*table));
  fs::resize_file(shard, offset + 16);
  {
    std::fstream out(shard, std::ios::binary | std::ios::in | std::ios::out);
    out.seekp(static_cast<std::streamoff>(offset));
    out.write(reinterpret_cast<const char*>(w.data()), 16);
  }
  absl::StatusOr<TfCheckpoint> ckpt = TfCheckpoint::Open(dir / "ckpt");
  ASSERT_TRUE(ckpt.ok()) << ckpt.status();
  EXPECT_EQ(ckpt->entries().at("w").offset, offset);
  std::vector<float> got(4);
  const absl::Status s = ckpt->CopyTo("w", Tensor(got.data(), {2, 2}, DType::kF32));
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(got, w);
}

TEST(SstableTest, ManyKeysSpanSeveralBlocksAndRestartPoints) {
  std::vector<SstableEntry> entries;
  for (int i = 0; i < 20000; ++i)
    entries.push_back(
        {fmt::format("bert/encoder/layer_{:05d}/kernel", i), std::string(i % 40, 'v')});
  const std::string table = BuildSstable(entries);
  EXPECT_GT(table.size(), 2u * 256 * 1024);  // more than one 256 KiB block
  absl::StatusOr<std::vector<SstableEntry>> read = ReadSstable("t", table);
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_EQ(read->size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ((*read)[i].key, entries[i].key);
    EXPECT_EQ((*read)[i].value, entries[i].value);
  }
}

// TensorFlow reads our files: run where a Python with TensorFlow is named
// by MLPERF_TF_PYTHON (or python3 has it).
TEST(TfCheckpointWriterTest, TensorFlowReadsWhatWeWrite) {
  const char* env = base::GetEnv("MLPERF_TF_PYTHON");
  const std::string python = env != nullptr ? env : "python3";
  if (std::system((python + " -c 'import tensorflow' > /dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "no TensorFlow for " << python << " (set MLPERF_TF_PYTHON)";
  TempDir dir("tf_reads");
  WrittenTensors w;
  std::vector<NamedTensor> tensors = w.tensors();
  // Enough names for several index blocks.
  std::vector<float> scalars(20000);
  for (size_t i = 0; i < scalars.size(); ++i) {
    scalars[i] = static_cast<float>(i) / 3.0f;
    tensors.push_back(
        {fmt::format("many/tensor_{:06d}", i), Tensor(&scalars[i], core::Shape{}, DType::kF32)});
  }
  ASSERT_TRUE(WriteTfCheckpoint(dir / "ckpt", tensors).ok());
  ASSERT_GT(fs::file_size(dir / "ckpt.index"), 256u * 1024);
  ASSERT_TRUE(SaveSafetensors(dir / "expected.safetensors", tensors).ok());
  const std::string command =
      fmt::format("{} {}/tests/bert/make_tf_checkpoint_fixture.py verify {} {} 2>&1", python,
                  MLPERF_SOURCE_DIR, dir / "ckpt", dir / "expected.safetensors");
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace mlperf::io
