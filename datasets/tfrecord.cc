#include "datasets/tfrecord.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "base/crc32c.h"
#include "example.pb.h"

namespace mlperf::datasets {

using base::Crc32c;
using base::Crc32cExtend;
using base::MaskCrc32c;
namespace {

constexpr uint64_t kHeaderBytes = 12;  // length + its CRC
constexpr uint64_t kFooterBytes = 4;   // data CRC

uint32_t LoadLe32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);  // the format is little-endian, like every host we build for
  return v;
}
uint64_t LoadLe64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

absl::Status ReadFully(int fd, const std::string& path, uint64_t offset, char* dst, uint64_t n) {
  while (n > 0) {
    const ssize_t got = ::pread(fd, dst, n, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      return absl::DataLossError(
          fmt::format("{}: read error at byte {}: {}", path, offset, std::strerror(errno)));
    }
    if (got == 0) {
      return absl::DataLossError(fmt::format("{}: truncated record at byte {}", path, offset));
    }
    dst += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<uint64_t>(got);
  }
  return absl::OkStatus();
}

// Checks the 12 header bytes found at `offset` of a file of `size` bytes
// (at least 12 bytes left there) and returns the record's data length.
absl::StatusOr<uint64_t> CheckHeader(const char* header, const std::string& path, uint64_t offset,
                                     uint64_t size) {
  if (MaskCrc32c(Crc32cExtend(0, header, 8)) != LoadLe32(header + 8)) {
    return absl::DataLossError(
        fmt::format("{}: corrupt record at byte {}: length checksum mismatch", path, offset));
  }
  const uint64_t length = LoadLe64(header);
  if (length > size - offset - kHeaderBytes ||
      size - offset - kHeaderBytes - length < kFooterBytes) {
    return absl::DataLossError(
        fmt::format("{}: truncated record at byte {}: {} data bytes announced, file ends first",
                    path, offset, length));
  }
  return length;
}

absl::Status CheckHeaderFits(const std::string& path, uint64_t offset, uint64_t size) {
  if (size - offset >= kHeaderBytes) return absl::OkStatus();
  return absl::DataLossError(
      fmt::format("{}: truncated record at byte {} ({} bytes left, a header needs 12)", path,
                  offset, size - offset));
}

// Reads and checks the 12-byte header at `offset` of a file of `size` bytes.
absl::StatusOr<uint64_t> ReadHeader(int fd, const std::string& path, uint64_t offset,
                                    uint64_t size) {
  if (absl::Status s = CheckHeaderFits(path, offset, size); !s.ok()) return s;
  char header[kHeaderBytes];
  if (absl::Status s = ReadFully(fd, path, offset, header, kHeaderBytes); !s.ok()) return s;
  return CheckHeader(header, path, offset, size);
}

// The headers of a file, read through a window of up to 1 MiB while records
// are small: with records of a few kilobytes (BERT's) one read brings
// hundreds of headers, where reading each header alone costs a system call
// per record. After a record of 64 KiB or more (ImageNet's JPEGs) only the
// next header is read, so that the data between headers is not.
class HeaderWindow {
 public:
  HeaderWindow(int fd, const std::string& path, uint64_t size)
      : fd_(fd), path_(path), size_(size) {}

  // The checked data length of the record whose header is at `offset`.
  absl::StatusOr<uint64_t> LengthAt(uint64_t offset) {
    if (absl::Status s = CheckHeaderFits(path_, offset, size_); !s.ok()) return s;
    if (offset < begin_ || offset + kHeaderBytes > begin_ + window_.size()) {
      const uint64_t want = last_length_ < kLargeRecord ? kWindowBytes : kHeaderBytes;
      window_.resize(static_cast<size_t>(std::min(want, size_ - offset)));
      if (absl::Status s = ReadFully(fd_, path_, offset, window_.data(), window_.size()); !s.ok())
        return s;
      begin_ = offset;
    }
    absl::StatusOr<uint64_t> length =
        CheckHeader(window_.data() + (offset - begin_), path_, offset, size_);
    if (length.ok()) last_length_ = *length;
    return length;
  }

 private:
  static constexpr uint64_t kWindowBytes = uint64_t{1} << 20;
  static constexpr uint64_t kLargeRecord = uint64_t{64} << 10;
  int fd_;
  const std::string& path_;
  uint64_t size_;
  std::vector<char> window_;
  uint64_t begin_ = 0;
  uint64_t last_length_ = 0;
};

absl::StatusOr<uint64_t> FileSize(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    return absl::NotFoundError(fmt::format("{}: cannot stat: {}", path, std::strerror(errno)));
  }
  return static_cast<uint64_t>(st.st_size);
}

absl::StatusOr<int> OpenForReading(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    return absl::NotFoundError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  }
  return fd;
}

}  // namespace

absl::Status ReadTfRecordAt(int fd, const std::string& path, const TfRecordLocation& loc,
                            std::string* data) {
  char header[kHeaderBytes];
  if (absl::Status s = ReadFully(fd, path, loc.offset, header, kHeaderBytes); !s.ok()) return s;
  if (MaskCrc32c(Crc32cExtend(0, header, 8)) != LoadLe32(header + 8) ||
      LoadLe64(header) != loc.length) {
    return absl::DataLossError(
        fmt::format("{}: corrupt record at byte {}: length checksum mismatch", path, loc.offset));
  }
  data->resize(loc.length + kFooterBytes);
  if (absl::Status s = ReadFully(fd, path, loc.offset + kHeaderBytes, data->data(), data->size());
      !s.ok()) {
    return s;
  }
  const uint32_t stored = LoadLe32(data->data() + loc.length);
  data->resize(loc.length);
  if (MaskCrc32c(Crc32c(*data)) != stored) {
    return absl::DataLossError(
        fmt::format("{}: corrupt record at byte {}: data checksum mismatch", path, loc.offset));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<TfRecordLocation>> IndexTfRecordFile(const std::string& path,
                                                                bool check_data) {
  absl::StatusOr<int> fd = OpenForReading(path);
  if (!fd.ok()) return fd.status();
  std::vector<TfRecordLocation> records;
  absl::Status status;
  absl::StatusOr<uint64_t> size = FileSize(*fd, path);
  if (!size.ok()) status = size.status();
  std::string data;
  HeaderWindow headers(*fd, path, size.ok() ? *size : 0);
  for (uint64_t offset = 0; status.ok() && offset < *size;) {
    absl::StatusOr<uint64_t> length = headers.LengthAt(offset);
    if (!length.ok()) {
      status = length.status();
      break;
    }
    const TfRecordLocation loc{offset, *length};
    if (check_data) status = ReadTfRecordAt(*fd, path, loc, &data);
    records.push_back(loc);
    offset += kHeaderBytes + *length + kFooterBytes;
  }
  ::close(*fd);
  if (!status.ok()) return status;
  return records;
}

absl::StatusOr<TfRecordReader> TfRecordReader::Open(const std::string& path) {
  absl::StatusOr<int> fd = OpenForReading(path);
  if (!fd.ok()) return fd.status();
  absl::StatusOr<uint64_t> size = FileSize(*fd, path);
  if (!size.ok()) {
    ::close(*fd);
    return size.status();
  }
  return TfRecordReader(path, *fd, *size);
}

TfRecordReader::TfRecordReader(TfRecordReader&& other) noexcept
    : path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      size_(other.size_),
      offset_(other.offset_) {}

TfRecordReader& TfRecordReader::operator=(TfRecordReader&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
    size_ = other.size_;
    offset_ = other.offset_;
  }
  return *this;
}

TfRecordReader::~TfRecordReader() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<bool> TfRecordReader::Next(std::string* data) {
  if (offset_ >= size_) return false;
  absl::StatusOr<uint64_t> length = ReadHeader(fd_, path_, offset_, size_);
  if (!length.ok()) return length.status();
  if (absl::Status s = ReadTfRecordAt(fd_, path_, {offset_, *length}, data); !s.ok()) return s;
  offset_ += kHeaderBytes + *length + kFooterBytes;
  return true;
}

absl::StatusOr<TfRecordWriter> TfRecordWriter::Open(const std::string& path) {
  const std::string tmp = path + ".tmp";
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    return absl::PermissionDeniedError(
        fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
  }
  return TfRecordWriter(path, f);
}

TfRecordWriter::TfRecordWriter(TfRecordWriter&& other) noexcept
    : path_(std::move(other.path_)), file_(std::exchange(other.file_, nullptr)) {}

TfRecordWriter& TfRecordWriter::operator=(TfRecordWriter&& other) noexcept {
  if (this != &other) {
    this->~TfRecordWriter();
    path_ = std::move(other.path_);
    file_ = std::exchange(other.file_, nullptr);
  }
  return *this;
}

TfRecordWriter::~TfRecordWriter() {
  if (file_ != nullptr) {
    std::fclose(file_);
    std::remove((path_ + ".tmp").c_str());
  }
}

absl::Status TfRecordWriter::Write(std::string_view data) {
  char header[kHeaderBytes];
  const uint64_t length = data.size();
  std::memcpy(header, &length, 8);
  const uint32_t length_crc = MaskCrc32c(Crc32cExtend(0, header, 8));
  std::memcpy(header + 8, &length_crc, 4);
  const uint32_t data_crc = MaskCrc32c(Crc32c(data));
  if (file_ == nullptr || std::fwrite(header, 1, kHeaderBytes, file_) != kHeaderBytes ||
      std::fwrite(data.data(), 1, data.size(), file_) != data.size() ||
      std::fwrite(&data_crc, 1, 4, file_) != 4) {
    return absl::DataLossError(fmt::format("{}.tmp: write failed", path_));
  }
  return absl::OkStatus();
}

absl::Status TfRecordWriter::Close() {
  if (file_ == nullptr) return absl::FailedPreconditionError(path_ + ": already closed");
  const bool ok = std::fclose(file_) == 0;
  file_ = nullptr;
  const std::string tmp = path_ + ".tmp";
  if (!ok || std::rename(tmp.c_str(), path_.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::DataLossError(fmt::format("{}: cannot finish writing", path_));
  }
  return absl::OkStatus();
}

bool ParseExample(std::string_view serialized, tfexample::Example& example) {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
  return example.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()));
}

absl::StatusOr<ImageRecord> ParseImageExample(std::string_view serialized,
                                              const std::string& where) {
  tfexample::Example example;
  if (!ParseExample(serialized, example)) {
    return absl::DataLossError(fmt::format("{}: not a valid tf.Example", where));
  }
  const auto& features = example.features().feature();
  ImageRecord record;
  auto encoded = features.find("image/encoded");
  if (encoded == features.end() || !encoded->second.has_bytes_list() ||
      encoded->second.bytes_list().value_size() != 1) {
    return absl::DataLossError(
        fmt::format("{}: tf.Example has no single bytes feature image/encoded", where));
  }
  record.encoded = encoded->second.bytes_list().value(0);
  auto label = features.find("image/class/label");
  if (label == features.end() || !label->second.has_int64_list() ||
      label->second.int64_list().value_size() != 1) {
    return absl::DataLossError(
        fmt::format("{}: tf.Example has no single int64 feature image/class/label", where));
  }
  record.label = label->second.int64_list().value(0);
  return record;
}

std::string MakeImageExample(std::string_view encoded, int64_t label) {
  tfexample::Example example;
  auto* features = example.mutable_features()->mutable_feature();
  (*features)["image/encoded"].mutable_bytes_list()->add_value(std::string(encoded));
  (*features)["image/format"].mutable_bytes_list()->add_value("JPEG");
  (*features)["image/class/label"].mutable_int64_list()->add_value(label);
  return example.SerializeAsString();
}

}  // namespace mlperf::datasets
