#include "datasets/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fstream>
#include <optional>
#include <string>

#include "base/files.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace mlperf::datasets {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

// The value of 'key' in the header's Python dict literal: a quoted string
// without its quotes, a tuple's inside, or a bare word (True, False).
std::string DictValue(const std::string& header, const std::string& key) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  at = header.find(':', at);
  if (at == std::string::npos) return "";
  at = header.find_first_not_of(' ', at + 1);
  if (at == std::string::npos) return "";
  if (header[at] == '\'' || header[at] == '(') {
    const size_t end = header.find(header[at] == '(' ? ')' : '\'', at + 1);
    return end == std::string::npos ? "" : header.substr(at + 1, end - at - 1);
  }
  const size_t end = header.find_first_of(",} ", at);
  return header.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

// The header, checked against the file's size; the elements too with `data`.
// The array takes `within` bytes from `offset` (the rest of the file by default).
absl::StatusOr<NpyArray> Read(const std::filesystem::path& path, bool data, uint64_t offset = 0,
                              std::optional<uint64_t> within = std::nullopt) {
  const std::string name = path.string();
  std::error_code ec;
  const uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec) return absl::NotFoundError(fmt::format("{}: cannot open: {}", name, ec.message()));
  if (offset > file_size || (within && *within > file_size - offset))
    return absl::DataLossError(fmt::format("{}: truncated", name));
  const uintmax_t size = within ? *within : file_size - offset;
  std::ifstream in(path, std::ios::binary);
  if (!in || !in.seekg(static_cast<std::streamoff>(offset)))
    return absl::NotFoundError(fmt::format("{}: cannot open: {}", name, std::strerror(errno)));
  // Magic, version, then the header's length: 2 bytes (v1) or 4 (v2, v3).
  char preamble[12] = {};
  if (size < 10 || !in.read(preamble, 10) || std::memcmp(preamble, kMagic, kMagicSize) != 0)
    return absl::DataLossError(fmt::format("{}: not a .npy file (bad magic)", name));
  const auto major = static_cast<uint8_t>(preamble[6]);
  const auto byte = [&](int i) { return static_cast<size_t>(static_cast<uint8_t>(preamble[i])); };
  size_t header_at = 10, header_len = byte(8) | byte(9) << 8;
  if (major == 2 || major == 3) {
    if (!in.read(preamble + 10, 2))
      return absl::DataLossError(fmt::format("{}: truncated header", name));
    header_at = 12;
    header_len |= byte(10) << 16 | byte(11) << 24;
  } else if (major != 1) {
    return absl::DataLossError(fmt::format("{}: .npy format version {} is unknown", name, major));
  }
  if (size < header_at + header_len)
    return absl::DataLossError(fmt::format("{}: truncated header", name));
  std::string header(header_len, '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(header_len)))
    return absl::DataLossError(fmt::format("{}: truncated header", name));
  NpyArray array;
  array.dtype = DictValue(header, "descr");
  if (NpyElementSize(array.dtype) == 0) {
    return absl::InvalidArgumentError(
        fmt::format("{}: dtype '{}', expected '<f4', '<i4', '<i8' or '|u1'", name, array.dtype));
  }
  if (const std::string order = DictValue(header, "fortran_order"); order != "False") {
    return absl::InvalidArgumentError(
        fmt::format("{}: fortran_order {}, expected False (C order)", name, order));
  }
  // The shape: integers separated by commas, perhaps with a trailing comma.
  const std::string dims = DictValue(header, "shape");
  int64_t count = 1;
  for (size_t at = 0; at < dims.size();) {
    const size_t end = std::min(dims.find(',', at), dims.size());
    const std::string dim = dims.substr(at, end - at);
    at = end + 1;
    if (dim.find_first_not_of(' ') == std::string::npos) continue;
    size_t used = 0;
    int64_t v = -1;
    try {
      v = std::stoll(dim, &used);
    } catch (const std::exception&) {
    }
    // Past the first 2^40 elements the file size check below cannot pass.
    if (v < 0 || dim.find_first_not_of(' ', used) != std::string::npos ||
        (v > 0 && count > (int64_t{1} << 40) / v)) {
      return absl::DataLossError(fmt::format("{}: bad shape '({})' in the header", name, dims));
    }
    array.shape.push_back(v);
    count *= v;
  }
  const auto bytes = static_cast<size_t>(count * NpyElementSize(array.dtype));
  if (size - header_at - header_len < bytes) {
    return absl::DataLossError(fmt::format("{}: truncated: {} bytes of data, the shape needs {}",
                                           name, size - header_at - header_len, bytes));
  }
  if (array.dtype == "<u1") array.dtype = "|u1";
  array.data_offset = offset + header_at + header_len;
  if (!data) return array;
  array.bytes.resize(bytes);
  if (!in.read(array.bytes.data(), static_cast<std::streamsize>(bytes)))
    return absl::DataLossError(fmt::format("{}: read failed in the data", name));
  return array;
}

}  // namespace

int64_t NpyElementSize(const std::string& dtype) {
  if (dtype == "<i8") return 8;
  if (dtype == "<f4" || dtype == "<i4") return 4;
  if (dtype == "|u1" || dtype == "<u1") return 1;
  return 0;
}

absl::StatusOr<NpyArray> ReadNpy(const std::filesystem::path& path) { return Read(path, true); }

absl::StatusOr<NpyArray> ReadNpyHeader(const std::filesystem::path& path) {
  return Read(path, false);
}

absl::StatusOr<NpyArray> ReadNpyHeaderAt(const std::filesystem::path& path, uint64_t offset,
                                         uint64_t size) {
  return Read(path, false, offset, size);
}

absl::StatusOr<std::string> NpyBytes(const std::string& dtype, const std::vector<int64_t>& shape,
                                     const void* data) {
  const int64_t element = NpyElementSize(dtype);
  if (element == 0) {
    return absl::InvalidArgumentError(
        fmt::format("dtype '{}', expected '<f4', '<i4', '<i8' or '|u1'", dtype));
  }
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return absl::InvalidArgumentError(fmt::format("negative size {}", d));
    count *= d;
  }
  std::string dims = fmt::format("{}", fmt::join(shape, ", "));
  if (shape.size() == 1) dims += ",";
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", dtype, dims);
  // Version 1: magic, version, 2-byte length; the whole preamble is padded
  // with spaces to a multiple of 64 bytes and ends in a newline, as NumPy does.
  const size_t preamble = kMagicSize + 4;
  header.append((64 - (preamble + header.size() + 1) % 64) % 64, ' ');
  header += '\n';
  std::string file(kMagic, kMagicSize);
  file += '\x01';
  file += '\x00';
  file += static_cast<char>(header.size() & 0xff);
  file += static_cast<char>(header.size() >> 8);
  file += header;
  file.append(static_cast<const char*>(data), static_cast<size_t>(count * element));
  return file;
}

absl::Status WriteNpy(const std::filesystem::path& path, const std::string& dtype,
                      const std::vector<int64_t>& shape, const void* data) {
  absl::StatusOr<std::string> file = NpyBytes(dtype, shape, data);
  if (!file.ok())
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", path.string(), std::string(file.status().message())));
  return base::WriteFileAtomically(path, *file);
}

}  // namespace mlperf::datasets
