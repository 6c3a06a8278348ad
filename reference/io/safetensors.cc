#include "reference/io/safetensors.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "base/json.h"

namespace mlperf::io {
namespace {

using core::DType;

// The format caps the header at 100 MB; anything larger is corrupt input.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

// Debian's Abseil has its own string_view, so messages are built as std::string.
absl::Status FileError(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

std::string BuildHeader(std::span<const NamedTensor> tensors, const Metadata& metadata) {
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    bool first = true;
    for (const auto& [k, v] : metadata) {
      if (!first) h += ",";
      first = false;
      json::DumpStringTo(k, h);
      h += ":";
      json::DumpStringTo(v, h);
    }
    h += "}";
  }
  size_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const core::Tensor& t = tensors[i].tensor;
    if (i > 0 || !metadata.empty()) h += ",";
    json::DumpStringTo(tensors[i].name, h);
    h += absl::StrCat(":{\"dtype\":\"", std::string(core::DTypeName(t.dtype())), "\",\"shape\":[");
    for (int d = 0; d < t.shape().rank(); ++d) h += absl::StrCat(d ? "," : "", t.dim(d));
    h += absl::StrCat("],\"data_offsets\":[", offset, ",", offset + t.bytes(), "]}");
    offset += t.bytes();
  }
  h += "}";
  // Pad with spaces so the data section starts 8-byte aligned, as the
  // reference writer does.
  while ((h.size() + 8) % 8 != 0) h += ' ';
  return h;
}

// A JSON integer that can be a size or an offset.
bool IsSize(const json::Value& v) { return v.is_int() && !v.is_big_int() && v.as_int() >= 0; }

absl::StatusOr<StoredTensor> ParseEntry(const std::string& path, const std::string& name,
                                        const json::Value& v, size_t data_bytes) {
  auto bad = [&](const std::string& what) {
    return FileError(path, absl::StrCat("tensor \"", name, "\": expected ", what));
  };
  if (!v.is_object()) return bad("an object");
  const json::Value* dtype = v.Find("dtype");
  const json::Value* shape = v.Find("shape");
  const json::Value* offsets = v.Find("data_offsets");
  if (dtype == nullptr || shape == nullptr || offsets == nullptr)
    return bad("keys dtype, shape and data_offsets");
  StoredTensor t;
  if (!dtype->is_string() || !core::DTypeFromName(dtype->as_string(), &t.dtype))
    return bad("dtype one of F32, BF16, F16, I32, I64, U8");
  if (!shape->is_array() || shape->as_array().size() > static_cast<size_t>(core::Shape::kMaxRank))
    return bad("shape an array of at most 6 integers");
  std::vector<int64_t> dims;
  uint64_t numel = 1;
  for (const json::Value& d : shape->as_array()) {
    if (!IsSize(d) || d.as_int() > (int64_t{1} << 40))
      return bad("shape entries non-negative integers");
    dims.push_back(d.as_int());
    numel *= static_cast<uint64_t>(d.as_int());
    if (numel > (uint64_t{1} << 40)) return bad("fewer than 2^40 elements");
  }
  core::Shape s;
  switch (dims.size()) {
    case 0:
      s = core::Shape{};
      break;
    case 1:
      s = {dims[0]};
      break;
    case 2:
      s = {dims[0], dims[1]};
      break;
    case 3:
      s = {dims[0], dims[1], dims[2]};
      break;
    case 4:
      s = {dims[0], dims[1], dims[2], dims[3]};
      break;
    case 5:
      s = {dims[0], dims[1], dims[2], dims[3], dims[4]};
      break;
    default:
      s = {dims[0], dims[1], dims[2], dims[3], dims[4], dims[5]};
      break;
  }
  t.shape = s;
  const json::Array& off = offsets->as_array();
  if (!offsets->is_array() || off.size() != 2 || !IsSize(off[0]) || !IsSize(off[1]))
    return bad("data_offsets [begin, end]");
  t.begin = static_cast<uint64_t>(off[0].as_int());
  t.end = static_cast<uint64_t>(off[1].as_int());
  if (t.begin > t.end || t.end > data_bytes)
    return bad(absl::StrCat("data_offsets within the ", data_bytes, "-byte data section"));
  if (t.end - t.begin != numel * core::DTypeSize(t.dtype))
    return bad("data_offsets spanning shape x dtype size bytes");
  return t;
}

}  // namespace

absl::Status SaveSafetensors(const std::string& path, std::span<const NamedTensor> tensors,
                             const Metadata& metadata) {
  for (const NamedTensor& nt : tensors) {
    if (nt.tensor.device() != core::Device::kCpu)
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": tensor \"", nt.name, "\" must be copied to the host first"));
  }
  const std::string header = BuildHeader(tensors, metadata);
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return FileError(tmp, "cannot open for writing");
    uint64_t n = header.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(header.data(), static_cast<std::streamsize>(header.size()));
    for (const NamedTensor& nt : tensors)
      out.write(static_cast<const char*>(nt.tensor.data()),
                static_cast<std::streamsize>(nt.tensor.bytes()));
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return FileError(tmp, "write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return FileError(path, "cannot rename the temporary file into place");
  }
  return absl::OkStatus();
}

absl::StatusOr<SafetensorsFile> SafetensorsFile::Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  SafetensorsFile f;
  f.path_ = path;
  f.bytes_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  if (f.bytes_.size() < 8) return FileError(path, "expected an 8-byte header length");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(static_cast<unsigned char>(f.bytes_[i])) << (8 * i);
  if (n > kMaxHeaderBytes || n > f.bytes_.size() - 8)
    return FileError(path, absl::StrCat("header length ", n, " exceeds the file size"));
  f.data_start_ = 8 + n;
  absl::StatusOr<json::Value> header =
      json::Parse(std::string_view(f.bytes_).substr(8, n), {.encoding = json::Encoding::kUtf8});
  if (!header.ok()) return FileError(path, std::string(header.status().message()));
  if (!header->is_object()) return FileError(path, "expected a JSON object");
  const size_t data_bytes = f.bytes_.size() - f.data_start_;
  for (const auto& [name, value] : header->as_object()) {
    if (name == "__metadata__") {
      if (!value.is_object()) return FileError(path, "expected __metadata__ to be an object");
      for (const auto& [k, v] : value.as_object()) {
        if (!v.is_string())
          return FileError(path, absl::StrCat("expected __metadata__.", k, " to be a string"));
        f.metadata_[k] = v.as_string();
      }
      continue;
    }
    absl::StatusOr<StoredTensor> t = ParseEntry(path, name, value, data_bytes);
    if (!t.ok()) return t.status();
    f.tensors_.emplace(name, *t);
  }
  return f;
}

absl::Status SafetensorsFile::CopyTo(const std::string& name, const core::Tensor& dst) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor \"", name, "\""));
  const StoredTensor& t = it->second;
  if (t.dtype != dst.dtype() || !(t.shape == dst.shape()))
    return FileError(
        path_,
        absl::StrCat("tensor \"", name, "\": expected ", std::string(core::DTypeName(dst.dtype())),
                     " ", dst.shape().ToString(), ", found ", std::string(core::DTypeName(t.dtype)),
                     " ", t.shape.ToString()));
  if (dst.device() != core::Device::kCpu)
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": tensor \"", name, "\" must be loaded into host memory"));
  std::memcpy(dst.data(), bytes_.data() + data_start_ + t.begin, t.end - t.begin);
  return absl::OkStatus();
}

absl::Status SafetensorsFile::CopyToFloats(const std::string& name, const core::Shape& shape,
                                           float* dst) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end())
    return absl::NotFoundError(absl::StrCat(path_, ": no tensor \"", name, "\""));
  const StoredTensor& t = it->second;
  const bool floating =
      t.dtype == core::DType::kF32 || t.dtype == core::DType::kBF16 || t.dtype == core::DType::kF16;
  if (!floating || !(t.shape == shape))
    return FileError(
        path_,
        absl::StrCat("tensor \"", name, "\": expected F32, BF16 or F16 ", shape.ToString(),
                     ", found ", std::string(core::DTypeName(t.dtype)), " ", t.shape.ToString()));
  const char* p = bytes_.data() + data_start_ + t.begin;
  const int64_t n = shape.numel();
  for (int64_t i = 0; i < n; ++i) {
    if (t.dtype == core::DType::kF32) {
      std::memcpy(dst + i, p + 4 * i, 4);
      continue;
    }
    uint16_t bits;
    std::memcpy(&bits, p + 2 * i, 2);
    dst[i] = t.dtype == core::DType::kBF16 ? core::Bf16ToFloat(bits) : core::HalfToFloat(bits);
  }
  return absl::OkStatus();
}

absl::StatusOr<Metadata> LoadSafetensors(const std::string& path,
                                         std::span<const NamedTensor> into) {
  absl::StatusOr<SafetensorsFile> f = SafetensorsFile::Read(path);
  if (!f.ok()) return f.status();
  for (const NamedTensor& nt : into) {
    absl::Status s = f->CopyTo(nt.name, nt.tensor);
    if (!s.ok()) return s;
  }
  return f->metadata();
}

}  // namespace mlperf::io
