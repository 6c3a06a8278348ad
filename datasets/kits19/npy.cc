#include "datasets/kits19/npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include "base/files.h"
#include "fmt/format.h"
#include "fmt/ranges.h"

namespace mlperf::kits19 {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicSize = 6;

int64_t ElementSize(const std::string& dtype) {
  if (dtype == "<f4") return 4;
  if (dtype == "|u1" || dtype == "<u1") return 1;
  return 0;
}

// The value after 'key': in the header's Python dict literal.
std::string DictValue(const std::string& header, const std::string& key) {
  const size_t at = header.find("'" + key + "'");
  if (at == std::string::npos) return "";
  size_t begin = header.find(':', at);
  if (begin == std::string::npos) return "";
  ++begin;
  while (begin < header.size() && header[begin] == ' ') ++begin;
  if (begin >= header.size()) return "";
  const char open = header[begin];
  const char close = open == '(' ? ')' : open == '\'' ? '\'' : ',';
  const size_t end = header.find(close, begin + 1);
  if (end == std::string::npos) return header.substr(begin);
  return open == '(' || open == '\'' ? header.substr(begin + 1, end - begin - 1)
                                     : header.substr(begin, end - begin);
}

}  // namespace

absl::StatusOr<NpyArray> ReadNpy(const std::filesystem::path& path) {
  const std::string name = path.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(fmt::format("{}: cannot open", name));
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < kMagicSize + 4 || file.compare(0, kMagicSize, kMagic, kMagicSize) != 0)
    return absl::DataLossError(fmt::format("{}: not a .npy file (bad magic)", name));
  const auto major = static_cast<uint8_t>(file[6]);
  size_t header_len = 0, header_at = 0;
  if (major == 1) {
    header_len = static_cast<uint8_t>(file[8]) | static_cast<size_t>(static_cast<uint8_t>(file[9]))
                                                     << 8;
    header_at = 10;
  } else if (major == 2 || major == 3) {
    if (file.size() < 12) return absl::DataLossError(fmt::format("{}: truncated header", name));
    for (int i = 3; i >= 0; --i) header_len = header_len << 8 | static_cast<uint8_t>(file[8 + i]);
    header_at = 12;
  } else {
    return absl::DataLossError(fmt::format("{}: .npy format version {} is unknown", name, major));
  }
  if (file.size() < header_at + header_len)
    return absl::DataLossError(fmt::format("{}: truncated header", name));
  const std::string header = file.substr(header_at, header_len);
  NpyArray array;
  array.dtype = DictValue(header, "descr");
  if (ElementSize(array.dtype) == 0) {
    return absl::InvalidArgumentError(
        fmt::format("{}: dtype '{}', expected '<f4' or '|u1'", name, array.dtype));
  }
  if (DictValue(header, "fortran_order") != "False")
    return absl::InvalidArgumentError(fmt::format("{}: Fortran order is not supported", name));
  std::stringstream dims(DictValue(header, "shape"));
  std::string dim;
  int64_t count = 1;
  while (std::getline(dims, dim, ',')) {
    if (dim.find_first_not_of(' ') == std::string::npos) continue;
    int64_t v = -1;
    try {
      v = std::stoll(dim);
    } catch (...) {
    }
    if (v < 0 || (v > 0 && count > (int64_t{1} << 40) / v))
      return absl::DataLossError(fmt::format("{}: bad shape in the header '{}'", name, header));
    array.shape.push_back(v);
    count *= v;
  }
  const size_t bytes = static_cast<size_t>(count * ElementSize(array.dtype));
  if (file.size() - header_at - header_len < bytes) {
    return absl::DataLossError(fmt::format("{}: truncated: {} bytes of data, the shape needs {}",
                                           name, file.size() - header_at - header_len, bytes));
  }
  if (array.dtype == "<u1") array.dtype = "|u1";
  array.bytes = file.substr(header_at + header_len, bytes);
  return array;
}

absl::Status WriteNpy(const std::filesystem::path& path, const std::string& dtype,
                      const std::vector<int64_t>& shape, const void* data) {
  const int64_t element = ElementSize(dtype);
  if (element == 0) return absl::InvalidArgumentError(fmt::format("WriteNpy: dtype '{}'", dtype));
  int64_t count = 1;
  for (int64_t d : shape) count *= d;
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
  return base::WriteFileAtomically(path, file);
}

}  // namespace mlperf::kits19
