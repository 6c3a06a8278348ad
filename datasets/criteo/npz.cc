#include "datasets/criteo/npz.h"

#include <zlib.h>

#include <cstring>
#include <fstream>

#include "base/files.h"
#include "fmt/format.h"

namespace mlperf::criteo {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50, kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50, kZip64End = 0x06064b50;
constexpr uint32_t kZip64Locator = 0x07064b50;

uint64_t Le(const std::string& b, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<uint8_t>(b[at + i]);
  return v;
}

void Put(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

// `n` bytes at `at` of the file, or an error naming it.
absl::StatusOr<std::string> ReadAt(std::ifstream& in, const std::string& name, uint64_t at,
                                   uint64_t n, uint64_t size) {
  if (at > size || n > size - at) return absl::DataLossError(fmt::format("{}: truncated", name));
  std::string b(n, '\0');
  if (!in.seekg(static_cast<std::streamoff>(at)) ||
      !in.read(b.data(), static_cast<std::streamsize>(n)))
    return absl::DataLossError(fmt::format("{}: read failed", name));
  return b;
}

}  // namespace

absl::StatusOr<std::map<std::string, datasets::NpyArray>> ReadNpzHeaders(
    const std::filesystem::path& path) {
  const std::string name = path.string();
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) return absl::NotFoundError(fmt::format("{}: cannot open: {}", name, ec.message()));
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open", name));
  // The end-of-directory record: in the last 22 bytes plus a comment of up to 64 KiB.
  const uint64_t tail = std::min<uint64_t>(size, 22 + 65535);
  absl::StatusOr<std::string> end = ReadAt(in, name, size - tail, tail, size);
  if (!end.ok()) return end.status();
  size_t eocd = std::string::npos;
  for (size_t i = end->size() >= 22 ? end->size() - 22 + 1 : 0; i-- > 0;)
    if (Le(*end, i, 4) == kEndOfDirectory) {
      eocd = i;
      break;
    }
  if (eocd == std::string::npos)
    return absl::DataLossError(fmt::format("{}: not a .npz (ZIP) archive", name));
  uint64_t entries = Le(*end, eocd + 10, 2), directory_size = Le(*end, eocd + 12, 4);
  uint64_t directory_at = Le(*end, eocd + 16, 4);
  if (entries == 0xffff || directory_at == 0xffffffff || directory_size == 0xffffffff) {
    // ZIP64: the locator just before the record points at the ZIP64 record.
    const uint64_t eocd_at = size - tail + eocd;
    if (eocd_at < 20) return absl::DataLossError(fmt::format("{}: bad ZIP64 locator", name));
    absl::StatusOr<std::string> locator = ReadAt(in, name, eocd_at - 20, 20, size);
    if (!locator.ok()) return locator.status();
    if (Le(*locator, 0, 4) != kZip64Locator)
      return absl::DataLossError(fmt::format("{}: bad ZIP64 locator", name));
    absl::StatusOr<std::string> record = ReadAt(in, name, Le(*locator, 8, 8), 56, size);
    if (!record.ok()) return record.status();
    if (Le(*record, 0, 4) != kZip64End)
      return absl::DataLossError(fmt::format("{}: bad ZIP64 end record", name));
    entries = Le(*record, 32, 8);
    directory_size = Le(*record, 40, 8);
    directory_at = Le(*record, 48, 8);
  }
  absl::StatusOr<std::string> dir = ReadAt(in, name, directory_at, directory_size, size);
  if (!dir.ok()) return dir.status();
  std::map<std::string, datasets::NpyArray> members;
  size_t at = 0;
  for (uint64_t e = 0; e < entries; ++e) {
    if (at + 46 > dir->size() || Le(*dir, at, 4) != kCentralHeader)
      return absl::DataLossError(fmt::format("{}: bad central directory", name));
    const uint64_t method = Le(*dir, at + 10, 2);
    uint64_t compressed = Le(*dir, at + 20, 4), stored = Le(*dir, at + 24, 4);
    const size_t name_len = Le(*dir, at + 28, 2), extra_len = Le(*dir, at + 30, 2);
    const size_t comment_len = Le(*dir, at + 32, 2);
    uint64_t local = Le(*dir, at + 42, 4);
    if (at + 46 + name_len + extra_len + comment_len > dir->size())
      return absl::DataLossError(fmt::format("{}: bad central directory", name));
    const std::string member = dir->substr(at + 46, name_len);
    // ZIP64 sizes and offset, in this order, for the fields that overflowed.
    const size_t extra_end = at + 46 + name_len + extra_len;
    for (size_t x = at + 46 + name_len; x + 4 <= extra_end;) {
      const uint64_t id = Le(*dir, x, 2), len = Le(*dir, x + 2, 2);
      if (x + 4 + len > extra_end) break;  // a field past its record: ignored
      size_t f = x + 4;
      if (id == 1) {
        for (uint64_t* v : {&stored, &compressed, &local})
          if (*v == 0xffffffff && f + 8 <= x + 4 + len) *v = Le(*dir, f, 8), f += 8;
      }
      x += 4 + len;
    }
    at += 46 + name_len + extra_len + comment_len;
    if (method != 0 || compressed != stored) {
      return absl::InvalidArgumentError(fmt::format(
          "{}: member {} is compressed (np.savez_compressed); the loader maps members in place, "
          "so it needs np.savez's stored members",
          name, member));
    }
    absl::StatusOr<std::string> header = ReadAt(in, name, local, 30, size);
    if (!header.ok()) return header.status();
    if (Le(*header, 0, 4) != kLocalHeader)
      return absl::DataLossError(fmt::format("{}: bad local header of {}", name, member));
    const uint64_t data = local + 30 + Le(*header, 26, 2) + Le(*header, 28, 2);
    absl::StatusOr<datasets::NpyArray> array = datasets::ReadNpyHeaderAt(path, data, stored);
    if (!array.ok()) {
      return absl::DataLossError(
          fmt::format("{} ({}): {}", name, member, std::string(array.status().message())));
    }
    members[member] = std::move(*array);
  }
  return members;
}

absl::Status WriteNpz(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, std::string>>& members) {
  std::string file, directory;
  for (const auto& [member, bytes] : members) {
    if (bytes.size() >= 0xffffffffu || file.size() >= 0xffffffffu - bytes.size())
      return absl::InvalidArgumentError(fmt::format("{}: members past 4 GiB", path.string()));
    const uint32_t crc = static_cast<uint32_t>(
        crc32(0, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size())));
    std::string common;    // version needed .. name length, shared by both headers
    Put(common, 20, 2);    // version needed: 2.0
    Put(common, 0, 2);     // flags
    Put(common, 0, 2);     // stored
    Put(common, 0, 2);     // time
    Put(common, 0x21, 2);  // date: 1980-01-01
    Put(common, crc, 4);
    Put(common, bytes.size(), 4);
    Put(common, bytes.size(), 4);
    Put(common, member.size(), 2);
    Put(directory, kCentralHeader, 4);
    Put(directory, 20, 2);  // made by
    directory += common;
    Put(directory, 0, 2);  // extra
    Put(directory, 0, 2);  // comment
    Put(directory, 0, 2);  // disk
    Put(directory, 0, 2);  // internal attributes
    Put(directory, 0, 4);  // external attributes
    Put(directory, file.size(), 4);
    directory += member;
    Put(file, kLocalHeader, 4);
    file += common;
    Put(file, 0, 2);  // extra
    file += member;
    file += bytes;
  }
  const uint64_t directory_at = file.size();
  file += directory;
  Put(file, kEndOfDirectory, 4);
  Put(file, 0, 4);  // disks
  Put(file, members.size(), 2);
  Put(file, members.size(), 2);
  Put(file, directory.size(), 4);
  Put(file, directory_at, 4);
  Put(file, 0, 2);  // comment
  return base::WriteFileAtomically(path, file);
}

}  // namespace mlperf::criteo
