#include "reference/io/zarr.h"

#include <algorithm>
#include <cstring>
#include <fstream>

#include "base/files.h"
#include "base/json.h"
#include "fmt/format.h"
#include "fmt/ranges.h"
#include "reference/core/dtype.h"

namespace mlperf::io {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kMaxMetadataBytes = 1 << 20;

absl::StatusOr<std::vector<int64_t>> Dimensions(const json::Value* v, const fs::path& file,
                                                const char* key) {
  if (v == nullptr || !v->is_array())
    return absl::DataLossError(fmt::format("{}: no \"{}\" list", file.string(), key));
  std::vector<int64_t> out;
  for (const json::Value& d : v->as_array()) {
    if (!d.is_int() || d.as_int() < 0)
      return absl::DataLossError(fmt::format("{}: \"{}\" holds a non-count", file.string(), key));
    out.push_back(d.as_int());
  }
  return out;
}

}  // namespace

absl::StatusOr<ZarrArray> ZarrArray::Open(const fs::path& dir) {
  const fs::path file = dir / ".zarray";
  absl::StatusOr<std::string> text = base::ReadSmallFile(file, kMaxMetadataBytes);
  if (!text.ok()) return text.status();
  absl::StatusOr<json::Value> doc = json::Parse(*text);
  if (!doc.ok() || !doc->is_object())
    return absl::DataLossError(fmt::format("{}: not a JSON object", file.string()));
  ZarrArray a;
  a.dir_ = dir;
  const json::Value* format = doc->Find("zarr_format");
  if (format == nullptr || !format->is_int() || format->as_int() != 2)
    return absl::DataLossError(fmt::format("{}: not Zarr format 2", file.string()));
  absl::StatusOr<std::vector<int64_t>> shape = Dimensions(doc->Find("shape"), file, "shape");
  if (!shape.ok()) return shape.status();
  absl::StatusOr<std::vector<int64_t>> chunks = Dimensions(doc->Find("chunks"), file, "chunks");
  if (!chunks.ok()) return chunks.status();
  if (shape->size() != chunks->size() ||
      std::any_of(chunks->begin(), chunks->end(), [](int64_t c) { return c < 1; }))
    return absl::DataLossError(
        fmt::format("{}: chunks {} do not fit shape {}", file.string(), *chunks, *shape));
  a.shape_ = *shape;
  a.chunks_ = *chunks;
  const json::Value* dtype = doc->Find("dtype");
  a.dtype_ = dtype != nullptr && dtype->is_string() ? dtype->as_string() : "";
  if (a.dtype_ == "<f4") {
    a.item_bytes_ = 4;
  } else if (a.dtype_ == "<f2" || a.dtype_ == "bfloat16") {
    a.item_bytes_ = 2;
  } else {
    return absl::UnimplementedError(fmt::format(
        "{}: dtype \"{}\" (float32, float16 and bfloat16 are read)", file.string(), a.dtype_));
  }
  const json::Value* compressor = doc->Find("compressor");
  if (compressor != nullptr && !compressor->is_null())
    return absl::UnimplementedError(
        fmt::format("{}: a compressor ({}); Megatron's checkpoints are uncompressed", file.string(),
                    json::Dump(*compressor)));
  const json::Value* filters = doc->Find("filters");
  if (filters != nullptr && !filters->is_null() &&
      !(filters->is_array() && filters->as_array().empty()))
    return absl::UnimplementedError(fmt::format("{}: filters are not read", file.string()));
  const json::Value* order = doc->Find("order");
  if (order == nullptr || !order->is_string() || order->as_string() != "C")
    return absl::UnimplementedError(fmt::format("{}: only C order is read", file.string()));
  const json::Value* fill = doc->Find("fill_value");
  if (fill != nullptr && (fill->is_int() || fill->is_float())) {
    a.has_fill_ = true;
    a.fill_ =
        static_cast<float>(fill->is_int() ? static_cast<double>(fill->as_int()) : fill->as_float());
  }
  const json::Value* separator = doc->Find("dimension_separator");
  if (separator != nullptr && separator->is_string()) {
    if (separator->as_string() != "." && separator->as_string() != "/")
      return absl::DataLossError(
          fmt::format("{}: dimension_separator \"{}\"", file.string(), separator->as_string()));
    a.separator_ = separator->as_string()[0];
  }
  return a;
}

absl::Status ZarrArray::ReadAll(std::span<float> out) const {
  const std::vector<int64_t> first(shape_.size(), 0);
  return Read(first, shape_, out);
}

absl::Status ZarrArray::Read(std::span<const int64_t> first, std::span<const int64_t> count,
                             std::span<float> out) const {
  const size_t n = shape_.size();
  if (first.size() != n || count.size() != n)
    return absl::InvalidArgumentError(fmt::format("{}: a box of {} dimensions from an array of {}",
                                                  dir_.string(), first.size(), n));
  int64_t elements = 1;
  for (size_t d = 0; d < n; ++d) {
    if (first[d] < 0 || count[d] < 0 || first[d] + count[d] > shape_[d])
      return absl::OutOfRangeError(fmt::format("{}: the box from {} of {} leaves shape {}",
                                               dir_.string(), first, count, shape_));
    elements *= count[d];
  }
  if (static_cast<int64_t>(out.size()) != elements)
    return absl::InvalidArgumentError(
        fmt::format("{}: {} elements into room for {}", dir_.string(), elements, out.size()));
  if (elements == 0) return absl::OkStatus();
  // The chunk grid over the box, then, in each chunk, the runs along the
  // last dimension.
  std::vector<int64_t> lo(n), hi(n), grid(n);
  for (size_t d = 0; d < n; ++d) {
    lo[d] = first[d] / chunks_[d];
    hi[d] = (first[d] + count[d] - 1) / chunks_[d];
    grid[d] = lo[d];
  }
  int64_t chunk_elements = 1;
  for (int64_t c : chunks_) chunk_elements *= c;
  std::vector<char> run;
  while (true) {
    // A scalar's one chunk is "0".
    std::string name(n == 0 ? 1 : 0, '0');
    for (size_t d = 0; d < n; ++d) {
      if (d > 0) name += separator_;
      name += std::to_string(grid[d]);
    }
    const fs::path path = dir_ / name;
    std::ifstream in(path, std::ios::binary);
    if (!in && !has_fill_)
      return absl::NotFoundError(
          fmt::format("{}: missing chunk {} and no fill value", dir_.string(), name));
    if (in) {
      in.seekg(0, std::ios::end);
      if (static_cast<int64_t>(in.tellg()) != chunk_elements * item_bytes_)
        return absl::DataLossError(fmt::format("{}: {} bytes, a chunk of {} {} needs {}",
                                               path.string(), static_cast<int64_t>(in.tellg()),
                                               chunks_, dtype_, chunk_elements * item_bytes_));
    }
    // The part of the box in this chunk, in array coordinates.
    std::vector<int64_t> a(n), b(n);
    for (size_t d = 0; d < n; ++d) {
      a[d] = std::max(first[d], grid[d] * chunks_[d]);
      b[d] = std::min(first[d] + count[d], (grid[d] + 1) * chunks_[d]);
    }
    const int64_t length = n == 0 ? 1 : b[n - 1] - a[n - 1];
    run.resize(static_cast<size_t>(length * item_bytes_));
    std::vector<int64_t> at(a);
    while (true) {
      int64_t in_chunk = 0, in_out = 0;
      for (size_t d = 0; d < n; ++d) {
        in_chunk = in_chunk * chunks_[d] + (at[d] - grid[d] * chunks_[d]);
        in_out = in_out * count[d] + (at[d] - first[d]);
      }
      float* dst = out.data() + in_out;
      if (!in) {
        std::fill(dst, dst + length, fill_);
      } else {
        in.seekg(in_chunk * item_bytes_);
        if (!in.read(run.data(), static_cast<std::streamsize>(run.size())))
          return absl::DataLossError(fmt::format("{}: read failed", path.string()));
        for (int64_t i = 0; i < length; ++i) {
          uint32_t bits = 0;
          std::memcpy(&bits, run.data() + i * item_bytes_, static_cast<size_t>(item_bytes_));
          dst[i] = item_bytes_ == 4       ? core::BitsToFloat(bits)
                   : dtype_ == "bfloat16" ? core::Bf16ToFloat(static_cast<uint16_t>(bits))
                                          : core::HalfToFloat(static_cast<uint16_t>(bits));
        }
      }
      // The next run: the odometer over every dimension but the last.
      size_t d = n > 0 ? n - 1 : 0;
      while (d-- > 0) {
        if (++at[d] < b[d]) break;
        at[d] = a[d];
      }
      if (d == static_cast<size_t>(-1) || n <= 1) break;
    }
    // The next chunk.
    size_t d = n;
    while (d-- > 0) {
      if (++grid[d] <= hi[d]) break;
      grid[d] = lo[d];
    }
    if (d == static_cast<size_t>(-1)) break;
  }
  return absl::OkStatus();
}

absl::Status WriteZarrArray(const fs::path& dir, std::span<const int64_t> shape,
                            std::span<const float> data) {
  int64_t n = 1;
  json::Array dims;
  for (int64_t d : shape) {
    n *= d;
    dims.emplace_back(d);
  }
  if (n != static_cast<int64_t>(data.size()))
    return absl::InvalidArgumentError(
        fmt::format("{}: {} values for shape {}", dir.string(), data.size(), shape));
  std::error_code ec;
  if (!fs::create_directories(dir, ec))
    return absl::AlreadyExistsError(fmt::format(
        "{}: {}", dir.string(), ec ? ec.message() : "exists already; nothing is replaced"));
  const json::Object meta = {{"chunks", dims},        {"compressor", nullptr},    {"dtype", "<f4"},
                             {"fill_value", nullptr}, {"filters", nullptr},       {"order", "C"},
                             {"shape", dims},         {"zarr_format", int64_t{2}}};
  if (absl::Status s = base::WriteFileAtomically(dir / ".zarray", json::Dump(json::Value(meta)));
      !s.ok())
    return s;
  std::string chunk(static_cast<size_t>(n) * 4, '\0');
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t bits = core::FloatBits(data[i]);
    std::memcpy(chunk.data() + i * 4, &bits, 4);
  }
  std::string name(shape.empty() ? 1 : 0, '0');
  for (size_t d = 0; d < shape.size(); ++d) name += d == 0 ? "0" : ".0";
  return base::WriteFileAtomically(dir / name, chunk);
}

}  // namespace mlperf::io
