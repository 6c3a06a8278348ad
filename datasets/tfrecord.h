// TFRecord files: a sequence of records, each framed as
//   uint64 length (little-endian), uint32 masked CRC-32C of those 8 bytes,
//   `length` data bytes, uint32 masked CRC-32C of the data.
// Both checksums are verified on every read; a mismatch or a file that ends
// inside a record is an error naming the file and the record's byte offset.
// The data of an ImageNet record is a serialized tf.Example with the features
// image/encoded (JPEG bytes) and image/class/label (int64, 1-based).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::datasets {

namespace tfexample {
class Example;
}

// Where one record lives: its header starts at `offset`; `length` data bytes.
struct TfRecordLocation {
  uint64_t offset = 0;
  uint64_t length = 0;
};

// Walks a whole file checking every header (length CRC) and that the file ends
// exactly at a record boundary; with `check_data`, also every data CRC.
absl::StatusOr<std::vector<TfRecordLocation>> IndexTfRecordFile(const std::string& path,
                                                                bool check_data);

// Reads the record at `loc` of an open file (pread on `fd`) into `data`,
// verifying both CRCs. `path` only names the file in errors.
absl::Status ReadTfRecordAt(int fd, const std::string& path, const TfRecordLocation& loc,
                            std::string* data);

// Sequential reader over every record of a file.
class TfRecordReader {
 public:
  static absl::StatusOr<TfRecordReader> Open(const std::string& path);
  TfRecordReader(TfRecordReader&& other) noexcept;
  TfRecordReader& operator=(TfRecordReader&& other) noexcept;
  ~TfRecordReader();

  // Reads the next record into `data`; returns false at a clean end of file.
  absl::StatusOr<bool> Next(std::string* data);
  uint64_t offset() const { return offset_; }  // of the next record

 private:
  TfRecordReader(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t offset_ = 0;
};

// Writes records to `path`.tmp and renames it on Close(), so a reader never
// sees a half-written shard under the final name.
class TfRecordWriter {
 public:
  static absl::StatusOr<TfRecordWriter> Open(const std::string& path);
  TfRecordWriter(TfRecordWriter&& other) noexcept;
  TfRecordWriter& operator=(TfRecordWriter&& other) noexcept;
  ~TfRecordWriter();  // without Close(), removes the temporary file

  absl::Status Write(std::string_view data);
  absl::Status Close();

 private:
  TfRecordWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  std::FILE* file_ = nullptr;
};

// The two ImageNet features of one tf.Example.
struct ImageRecord {
  std::string encoded;  // image/encoded
  int64_t label = 0;    // image/class/label as stored (1-based in ImageNet shards)
};

// Parses a serialized tf.Example; `where` (file and offset) names it in errors.
// Parses a serialized tf.Example. The protobuf library's own log lines (a
// feature key that is not UTF-8) are silenced: the caller's error says it.
bool ParseExample(std::string_view serialized, tfexample::Example& example);

absl::StatusOr<ImageRecord> ParseImageExample(std::string_view serialized,
                                              const std::string& where);
// Serializes a tf.Example with image/encoded, image/class/label and image/format "JPEG".
std::string MakeImageExample(std::string_view encoded, int64_t label);

}  // namespace mlperf::datasets
