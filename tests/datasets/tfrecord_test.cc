// CRC-32C, TFRecord framing (round trip, corruption, truncation) and tf.Example
// parsing, including a hand-assembled wire-format message that pins the field
// numbers independently of our .proto file.
#include "datasets/tfrecord.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "base/crc32c.h"
#include "fmt/format.h"
#include "tests/datasets/test_dir.h"

namespace mlperf::datasets {

using base::Crc32c;
using base::Crc32cExtend;
using base::MaskCrc32c;
namespace {

using testing::TempDir;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

TEST(Crc32cTest, KnownVectors) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
  // RFC 3720 (iSCSI) appendix B.4.
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xFF')), 0x62A8AB43u);
  std::string ascending, descending;
  for (int i = 0; i < 32; ++i) {
    ascending.push_back(static_cast<char>(i));
    descending.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);
}

TEST(Crc32cTest, ExtendEqualsWholeForEverySplit) {
  std::string data;
  for (int i = 0; i < 100; ++i) data.push_back(static_cast<char>(i * 37 + 11));
  const uint32_t whole = Crc32c(data);
  for (size_t cut = 0; cut <= data.size(); ++cut) {
    const uint32_t a = Crc32cExtend(0, data.data(), cut);
    EXPECT_EQ(Crc32cExtend(a, data.data() + cut, data.size() - cut), whole) << cut;
  }
}

TEST(Crc32cTest, MaskIsRotatePlusConstant) {
  EXPECT_EQ(MaskCrc32c(0), 0xA282EAD8u);
  EXPECT_EQ(MaskCrc32c(0x00008000u), 0x00000001u + 0xA282EAD8u);
  EXPECT_EQ(MaskCrc32c(0x00000001u), 0x00020000u + 0xA282EAD8u);
}

class TfRecordTest : public ::testing::Test {
 protected:
  void WriteRecords(const std::string& path, const std::vector<std::string>& records) {
    absl::StatusOr<TfRecordWriter> w = TfRecordWriter::Open(path);
    ASSERT_TRUE(w.ok()) << w.status();
    for (const std::string& r : records) ASSERT_TRUE(w->Write(r).ok());
    ASSERT_TRUE(w->Close().ok());
  }
  std::vector<std::string> records_ = {"first", std::string(1000, 'x'), "", "last record"};
  TempDir dir_{"tfrecord"};
};

TEST_F(TfRecordTest, RoundTripAndExactFraming) {
  const std::string path = dir_ / "train-00000-of-00001";
  WriteRecords(path, records_);
  size_t expected_size = 0;
  for (const std::string& r : records_) expected_size += 16 + r.size();
  EXPECT_EQ(ReadAll(path).size(), expected_size);
  // Framing of the first record by hand: length, masked CRC of it, data, masked CRC.
  const std::string bytes = ReadAll(path);
  uint64_t length;
  std::memcpy(&length, bytes.data(), 8);
  EXPECT_EQ(length, 5u);
  uint32_t length_crc, data_crc;
  std::memcpy(&length_crc, bytes.data() + 8, 4);
  std::memcpy(&data_crc, bytes.data() + 12 + 5, 4);
  EXPECT_EQ(length_crc, MaskCrc32c(Crc32c(bytes.substr(0, 8))));
  EXPECT_EQ(data_crc, MaskCrc32c(Crc32c("first")));

  absl::StatusOr<TfRecordReader> reader = TfRecordReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status();
  std::string data;
  for (const std::string& want : records_) {
    absl::StatusOr<bool> got = reader->Next(&data);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(*got);
    EXPECT_EQ(data, want);
  }
  absl::StatusOr<bool> end = reader->Next(&data);
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(*end);

  absl::StatusOr<std::vector<TfRecordLocation>> index = IndexTfRecordFile(path, true);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->size(), records_.size());
  EXPECT_EQ((*index)[1].offset, 16u + 5u);
  EXPECT_EQ((*index)[1].length, 1000u);
}

TEST_F(TfRecordTest, FlippedDataByteNamesFileAndOffset) {
  const std::string path = dir_ / "shard";
  WriteRecords(path, records_);
  std::string bytes = ReadAll(path);
  const size_t second = 16 + 5;
  bytes[second + 12 + 500] ^= 0x01;  // inside the data of record 2
  WriteAll(path, bytes);
  absl::StatusOr<std::vector<TfRecordLocation>> index = IndexTfRecordFile(path, true);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find(path), std::string::npos) << index.status();
  EXPECT_NE(index.status().message().find("byte 21"), std::string::npos) << index.status();
  EXPECT_NE(index.status().message().find("data checksum"), std::string::npos) << index.status();
  // Header-only indexing does not read the data; a read of that record does.
  index = IndexTfRecordFile(path, false);
  ASSERT_TRUE(index.ok());
  const int fd = ::open(path.c_str(), O_RDONLY);
  std::string data;
  EXPECT_TRUE(ReadTfRecordAt(fd, path, (*index)[0], &data).ok());
  absl::Status s = ReadTfRecordAt(fd, path, (*index)[1], &data);
  ::close(fd);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("byte 21"), std::string::npos) << s;
}

TEST_F(TfRecordTest, FlippedLengthByteIsDetected) {
  const std::string path = dir_ / "shard";
  WriteRecords(path, records_);
  std::string bytes = ReadAll(path);
  bytes[16 + 5 + 1] ^= 0x10;  // length field of record 2
  WriteAll(path, bytes);
  absl::StatusOr<std::vector<TfRecordLocation>> index = IndexTfRecordFile(path, false);
  ASSERT_FALSE(index.ok());
  EXPECT_NE(index.status().message().find("byte 21"), std::string::npos) << index.status();
  EXPECT_NE(index.status().message().find("length checksum"), std::string::npos) << index.status();
}

// Header-only indexing reads small records' headers a window at a time and
// a large record's next header alone: a shard of both kinds across several
// windows indexes exactly like a record-by-record walk, a header broken past
// the first window is found at its byte, and a cut past it too.
TEST_F(TfRecordTest, IndexAcrossReadWindowsAndLargeRecords) {
  std::vector<std::string> records;
  for (int i = 0; i < 3000; ++i) records.push_back(std::string(700 + i % 300, 'a' + i % 26));
  records.push_back(std::string(200000, 'L'));  // large: the next header is read alone
  for (int i = 0; i < 2000; ++i) records.push_back(std::string(i % 50, 'b'));
  records.push_back(std::string(70000, 'M'));
  records.push_back("end");
  const std::string path = dir_ / "shard";
  WriteRecords(path, records);
  absl::StatusOr<std::vector<TfRecordLocation>> index = IndexTfRecordFile(path, false);
  ASSERT_TRUE(index.ok()) << index.status();
  ASSERT_EQ(index->size(), records.size());
  uint64_t offset = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    ASSERT_EQ((*index)[i].offset, offset) << i;
    ASSERT_EQ((*index)[i].length, records[i].size()) << i;
    offset += 16 + records[i].size();
  }
  const std::string bytes = ReadAll(path);
  ASSERT_GT((*index)[2500].offset, uint64_t{1} << 21);  // well past the first window
  for (const size_t k : {size_t{2500}, size_t{3001}, records.size() - 1}) {
    std::string broken = bytes;
    broken[(*index)[k].offset + 3] ^= 0x04;  // a length byte
    WriteAll(path, broken);
    absl::StatusOr<std::vector<TfRecordLocation>> bad = IndexTfRecordFile(path, false);
    ASSERT_FALSE(bad.ok()) << k;
    EXPECT_NE(bad.status().message().find(fmt::format("byte {}", (*index)[k].offset)),
              std::string::npos)
        << bad.status();
  }
  WriteAll(path, bytes.substr(0, (*index)[3001].offset + 6));
  absl::StatusOr<std::vector<TfRecordLocation>> cut = IndexTfRecordFile(path, false);
  ASSERT_FALSE(cut.ok());
  EXPECT_NE(cut.status().message().find("truncated"), std::string::npos) << cut.status();
}

TEST_F(TfRecordTest, TruncatedFileIsDetectedAtEveryCut) {
  const std::string path = dir_ / "shard";
  WriteRecords(path, records_);
  const std::string bytes = ReadAll(path);
  for (size_t cut :
       {bytes.size() - 1, bytes.size() - 4, bytes.size() - 10, size_t{30}, size_t{3}}) {
    WriteAll(path, bytes.substr(0, cut));
    absl::StatusOr<std::vector<TfRecordLocation>> index = IndexTfRecordFile(path, false);
    ASSERT_FALSE(index.ok()) << cut;
    EXPECT_NE(index.status().message().find("truncated"), std::string::npos) << index.status();
    EXPECT_NE(index.status().message().find(path), std::string::npos) << index.status();
    absl::StatusOr<TfRecordReader> reader = TfRecordReader::Open(path);
    ASSERT_TRUE(reader.ok());
    std::string data;
    absl::StatusOr<bool> got = true;
    while (got.ok() && *got) got = reader->Next(&data);
    EXPECT_FALSE(got.ok()) << "cut at " << cut;
  }
}

TEST_F(TfRecordTest, UnclosedWriterLeavesNoShard) {
  const std::string path = dir_ / "shard";
  {
    absl::StatusOr<TfRecordWriter> w = TfRecordWriter::Open(path);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Write("abc").ok());
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(ExampleTest, RoundTrip) {
  const std::string jpeg("\xFF\xD8 fake jpeg \x00 bytes", 20);
  absl::StatusOr<ImageRecord> r = ParseImageExample(MakeImageExample(jpeg, 417), "test");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->encoded, jpeg);
  EXPECT_EQ(r->label, 417);
}

// Protobuf wire format helpers for a hand-built tf.Example.
std::string Varint(uint64_t v) {
  std::string s;
  while (v >= 0x80) {
    s.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  s.push_back(static_cast<char>(v));
  return s;
}
std::string Field(int number, const std::string& payload) {  // length-delimited
  return Varint(static_cast<uint64_t>(number) << 3 | 2) + Varint(payload.size()) + payload;
}

TEST(ExampleTest, ParsesHandAssembledWireFormat) {
  // Example{features=1: Features{feature=1: map entry{key=1, value=2: Feature}}};
  // Feature: bytes_list=1 {value=1}, int64_list=3 {value=1, packed}.
  const std::string bytes_feature = Field(1, Field(1, "JPEGDATA"));
  const std::string int64_feature = Field(3, Field(1, Varint(1000)));
  const std::string float_feature = Field(2, Field(1, std::string("\x00\x00\x80\x3f", 4)));
  const std::string features =
      Field(1, Field(1, "image/encoded") + Field(2, bytes_feature)) +
      Field(1, Field(1, "image/class/label") + Field(2, int64_feature)) +
      Field(1, Field(1, "image/object/bbox/xmin") + Field(2, float_feature));
  const std::string example = Field(1, features);
  absl::StatusOr<ImageRecord> r = ParseImageExample(example, "hand-built");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->encoded, "JPEGDATA");
  EXPECT_EQ(r->label, 1000);
}

TEST(ExampleTest, MissingOrMistypedFeaturesAreErrors) {
  const std::string no_label =
      Field(1, Field(1, Field(1, "image/encoded") + Field(2, Field(1, Field(1, "J")))));
  absl::StatusOr<ImageRecord> r = ParseImageExample(no_label, "shard-7: record at byte 99");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shard-7: record at byte 99"), std::string::npos);
  EXPECT_NE(r.status().message().find("image/class/label"), std::string::npos);
  // A label stored as bytes instead of int64.
  const std::string wrong =
      Field(1, Field(1, Field(1, "image/encoded") + Field(2, Field(1, Field(1, "J")))) +
                   Field(1, Field(1, "image/class/label") + Field(2, Field(1, Field(1, "7")))));
  EXPECT_FALSE(ParseImageExample(wrong, "x").ok());
  EXPECT_FALSE(ParseImageExample("\xFF\xFF\xFF garbage", "x").ok());
}

// A feature key that is not UTF-8 is our one error, with no line of the
// protobuf library's own before it.
TEST(TfExampleTest, AKeyThatIsNotUtf8IsOneErrorOfOurs) {
  const std::string bad_key =
      Field(1, Field(1, Field(1, "bad\xff\xfekey") + Field(2, Field(1, Field(1, "J")))));
  ::testing::internal::CaptureStderr();
  absl::StatusOr<ImageRecord> r = ParseImageExample(bad_key, "shard-1: record at byte 92");
  const std::string printed = ::testing::internal::GetCapturedStderr();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "shard-1: record at byte 92: not a valid tf.Example");
  EXPECT_EQ(printed, "");
}

}  // namespace
}  // namespace mlperf::datasets
