#include "reference/io/tf_checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <numeric>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/crc32c.h"
#include "base/files.h"
#include "io/tf_bundle.pb.h"
#include "reference/io/sstable.h"

namespace mlperf::io {

using base::Crc32c;
using base::MaskCrc32c;
using base::UnmaskCrc32c;
namespace {

namespace pb = tfbundle;
using core::DType;

// Stored bytes are copied as they are: the bundle is little-endian.
static_assert(std::endian::native == std::endian::little);

// TensorFlow's tensor bundle version: readers accept producers whose
// min_consumer is at most this (tensor_bundle.cc, kTensorBundleVersion).
constexpr int kBundleVersion = 1;

absl::Status FileError(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// Escaped: the names of partitions hold NUL and other control bytes.
std::string Quoted(const std::string& name) {
  return absl::StrCat("tensor \"", absl::CHexEscape(name), "\"");
}

std::optional<DType> FromTf(int tf_dtype) {
  switch (tf_dtype) {
    case pb::DT_FLOAT:
      return DType::kF32;
    case pb::DT_BFLOAT16:
      return DType::kBF16;
    case pb::DT_HALF:
      return DType::kF16;
    case pb::DT_INT32:
      return DType::kI32;
    case pb::DT_INT64:
      return DType::kI64;
    case pb::DT_UINT8:
      return DType::kU8;
    default:
      return std::nullopt;
  }
}

pb::DataType ToTf(DType dtype) {
  switch (dtype) {
    case DType::kF32:
      return pb::DT_FLOAT;
    case DType::kBF16:
      return pb::DT_BFLOAT16;
    case DType::kF16:
      return pb::DT_HALF;
    case DType::kI32:
      return pb::DT_INT32;
    case DType::kI64:
      return pb::DT_INT64;
    case DType::kU8:
      return pb::DT_UINT8;
  }
  return pb::DT_INVALID;
}

std::string ShapeString(const pb::TensorShapeProto& shape) {
  std::string s = "[";
  for (int i = 0; i < shape.dim_size(); ++i)
    absl::StrAppend(&s, i ? ", " : "", shape.dim(i).size());
  return s + "]";
}

// The entry's fields, checked against each other and the header.
absl::StatusOr<TfTensorInfo> ParseEntry(const std::string& index_path, const std::string& name,
                                        const std::string& value, int num_shards) {
  auto bad = [&](const std::string& what) {
    return FileError(index_path, absl::StrCat(Quoted(name), ": ", what));
  };
  pb::BundleEntryProto entry;
  if (!entry.ParseFromString(value)) return bad("malformed BundleEntryProto");
  TfTensorInfo info;
  info.tf_dtype = entry.dtype();
  info.dtype = FromTf(entry.dtype());
  info.slices = entry.slices_size();
  if (entry.shape().unknown_rank()) return bad("shape of unknown rank");
  if (entry.shape().dim_size() > core::Shape::kMaxRank)
    return bad(absl::StrCat("rank ", entry.shape().dim_size(), " exceeds ", core::Shape::kMaxRank));
  int64_t d[core::Shape::kMaxRank] = {};
  uint64_t numel = 1;
  for (int i = 0; i < entry.shape().dim_size(); ++i) {
    d[i] = entry.shape().dim(i).size();
    if (d[i] < 0 || d[i] > (int64_t{1} << 40)) return bad("shape " + ShapeString(entry.shape()));
    numel *= static_cast<uint64_t>(d[i]);
    if (numel > (uint64_t{1} << 40)) return bad("more than 2^40 elements");
  }
  switch (entry.shape().dim_size()) {
    case 0:
      info.shape = core::Shape{};
      break;
    case 1:
      info.shape = {d[0]};
      break;
    case 2:
      info.shape = {d[0], d[1]};
      break;
    case 3:
      info.shape = {d[0], d[1], d[2]};
      break;
    case 4:
      info.shape = {d[0], d[1], d[2], d[3]};
      break;
    case 5:
      info.shape = {d[0], d[1], d[2], d[3], d[4]};
      break;
    default:
      info.shape = {d[0], d[1], d[2], d[3], d[4], d[5]};
      break;
  }
  if (entry.shard_id() < 0 || entry.shard_id() >= num_shards)
    return bad(absl::StrCat("shard ", entry.shard_id(), " of a ", num_shards, "-shard checkpoint"));
  if (entry.offset() < 0 || entry.size() < 0 ||
      entry.size() > std::numeric_limits<int64_t>::max() - entry.offset())
    return bad(absl::StrCat("bad byte range offset ", entry.offset(), " size ", entry.size()));
  info.shard = entry.shard_id();
  info.offset = static_cast<uint64_t>(entry.offset());
  info.size = static_cast<uint64_t>(entry.size());
  info.crc32c = UnmaskCrc32c(entry.crc32c());
  // A partitioned variable's own entry holds no bytes; its slices do.
  if (info.dtype && info.slices == 0 && info.size != numel * core::DTypeSize(*info.dtype))
    return bad(absl::StrCat(info.size, " bytes for ", TfDTypeName(info.tf_dtype), " ",
                            ShapeString(entry.shape()), ", expected ",
                            numel * core::DTypeSize(*info.dtype)));
  return info;
}

absl::Status CheckHeader(const std::string& index_path, const std::string& value, int* num_shards) {
  pb::BundleHeaderProto header;
  if (!header.ParseFromString(value))
    return FileError(index_path, "malformed BundleHeaderProto under the empty name");
  if (header.endianness() != pb::BundleHeaderProto::LITTLE)
    return absl::UnimplementedError(
        absl::StrCat(index_path, ": a big-endian bundle; only little-endian ones are supported"));
  const pb::VersionDef& v = header.version();
  if (v.min_consumer() > kBundleVersion ||
      std::find(v.bad_consumers().begin(), v.bad_consumers().end(), kBundleVersion) !=
          v.bad_consumers().end())
    return absl::UnimplementedError(absl::StrCat(index_path, ": bundle version ", v.producer(),
                                                 " needs a reader of version ", v.min_consumer(),
                                                 " or later (this one is ", kBundleVersion, ")"));
  // Far above any real checkpoint; guards the per-shard file checks.
  if (header.num_shards() < 1 || header.num_shards() > 100000)
    return FileError(index_path, absl::StrCat("bad shard count ", header.num_shards()));
  *num_shards = header.num_shards();
  return absl::OkStatus();
}

// Reads exactly `size` bytes at `offset` of the open file.
bool ReadAt(int fd, void* dst, uint64_t size, uint64_t offset) {
  auto* p = static_cast<char*>(dst);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<uint64_t>(n);
    offset += static_cast<uint64_t>(n);
  }
  return true;
}

// A file descriptor closed on every path out.
class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  int fd() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string TfDTypeName(int tf_dtype) {
  switch (tf_dtype) {
    case pb::DT_FLOAT:
      return "float32";
    case pb::DT_DOUBLE:
      return "float64";
    case pb::DT_INT32:
      return "int32";
    case pb::DT_UINT8:
      return "uint8";
    case pb::DT_INT16:
      return "int16";
    case pb::DT_INT8:
      return "int8";
    case pb::DT_STRING:
      return "string";
    case pb::DT_COMPLEX64:
      return "complex64";
    case pb::DT_INT64:
      return "int64";
    case pb::DT_BOOL:
      return "bool";
    case pb::DT_BFLOAT16:
      return "bfloat16";
    case pb::DT_UINT16:
      return "uint16";
    case pb::DT_COMPLEX128:
      return "complex128";
    case pb::DT_HALF:
      return "float16";
    case pb::DT_RESOURCE:
      return "resource";
    case pb::DT_VARIANT:
      return "variant";
    case pb::DT_UINT32:
      return "uint32";
    case pb::DT_UINT64:
      return "uint64";
    default:
      return absl::StrCat("DataType ", tf_dtype);
  }
}

std::string TfCheckpoint::ShardPath(int shard) const {
  return absl::StrFormat("%s.data-%05d-of-%05d", prefix_, shard, num_shards_);
}

absl::StatusOr<TfCheckpoint> TfCheckpoint::Open(const std::string& prefix) {
  TfCheckpoint ckpt;
  ckpt.prefix_ = prefix;
  const std::string index_path = ckpt.IndexPath();
  // Non-blocking and bounded: a FIFO or a device is refused, not waited on.
  absl::StatusOr<std::string> bytes = base::ReadSmallFile(index_path, 256 << 20);
  if (!bytes.ok()) return bytes.status();
  absl::StatusOr<std::vector<SstableEntry>> table = ReadSstable(index_path, *bytes);
  if (!table.ok()) return table.status();
  // Keys are sorted, so the header (the empty name) comes first.
  if (table->empty() || !table->front().key.empty())
    return FileError(index_path, "no BundleHeaderProto under the empty name: not a tensor bundle");
  if (absl::Status s = CheckHeader(index_path, table->front().value, &ckpt.num_shards_); !s.ok())
    return s;
  // The furthest byte each shard must hold, and the tensor that needs it.
  std::vector<std::pair<uint64_t, std::string>> shard_ends(ckpt.num_shards_);
  for (size_t i = 1; i < table->size(); ++i) {
    const SstableEntry& e = (*table)[i];
    absl::StatusOr<TfTensorInfo> info = ParseEntry(index_path, e.key, e.value, ckpt.num_shards_);
    if (!info.ok()) return info.status();
    auto& end = shard_ends[info->shard];
    if (info->offset + info->size > end.first) end = {info->offset + info->size, e.key};
    ckpt.entries_.emplace(e.key, *info);
  }
  for (int s = 0; s < ckpt.num_shards_; ++s) {
    const std::string path = ckpt.ShardPath(s);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0)
      return absl::NotFoundError(absl::StrCat(path, ": missing shard ", s, " of ", ckpt.num_shards_,
                                              " (", std::strerror(errno), ")"));
    const auto& [end, name] = shard_ends[s];
    if (static_cast<uint64_t>(st.st_size) < end)
      return absl::DataLossError(absl::StrCat(path, ": ", Quoted(name), " ends at byte ", end,
                                              " but the shard has ", st.st_size,
                                              " bytes: truncated file?"));
  }
  return ckpt;
}

absl::Status TfCheckpoint::CopyTo(const std::string& name, const core::Tensor& dst) const {
  const std::string index_path = IndexPath();
  auto it = entries_.find(name);
  if (it == entries_.end())
    return absl::NotFoundError(absl::StrCat(index_path, ": no ", Quoted(name)));
  const TfTensorInfo& t = it->second;
  if (t.slices > 0)
    return absl::UnimplementedError(absl::StrCat(index_path, ": ", Quoted(name),
                                                 " is a partitioned variable (", t.slices,
                                                 " slices); only whole tensors are supported"));
  if (!t.dtype)
    return absl::UnimplementedError(absl::StrCat(index_path, ": ", Quoted(name), " has dtype ",
                                                 TfDTypeName(t.tf_dtype),
                                                 ", which this reader does not support"));
  const bool widen =
      dst.dtype() == DType::kF32 && (t.dtype == DType::kF16 || t.dtype == DType::kBF16);
  if (!(dst.shape() == t.shape) || (dst.dtype() != *t.dtype && !widen))
    return FileError(index_path, absl::StrCat(Quoted(name), ": expected ",
                                              std::string(core::DTypeName(dst.dtype())), " ",
                                              dst.shape().ToString(), ", found ",
                                              TfDTypeName(t.tf_dtype), " ", t.shape.ToString()));
  if (dst.device() != core::Device::kCpu)
    return absl::InvalidArgumentError(
        absl::StrCat(index_path, ": ", Quoted(name), " must be read into host memory"));
  const std::string path = ShardPath(t.shard);
  File file(path);
  if (file.fd() < 0)
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open (", std::strerror(errno), ") to read ", Quoted(name)));
  std::vector<uint16_t> halves(widen ? static_cast<size_t>(t.shape.numel()) : 0);
  void* bytes = widen ? static_cast<void*>(halves.data()) : dst.data();
  if (!ReadAt(file.fd(), bytes, t.size, t.offset))
    return absl::DataLossError(absl::StrCat(path, ": ", Quoted(name), " bytes [", t.offset, ", ",
                                            t.offset + t.size,
                                            ") lie past the end of the shard: truncated file?"));
  const uint32_t crc = Crc32c(bytes, t.size);
  if (crc != t.crc32c)
    return absl::DataLossError(
        absl::StrFormat("%s: %s: CRC-32C mismatch (index says %08x, bytes have %08x)", path,
                        Quoted(name), t.crc32c, crc));
  if (widen) {
    float* out = dst.f32();
    for (size_t i = 0; i < halves.size(); ++i)
      out[i] = t.dtype == DType::kF16 ? core::HalfToFloat(halves[i]) : core::Bf16ToFloat(halves[i]);
  }
  return absl::OkStatus();
}

absl::Status WriteTfCheckpoint(const std::string& prefix, std::span<const NamedTensor> tensors) {
  const std::string data_path = prefix + ".data-00000-of-00001";
  const std::string index_path = prefix + ".index";
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  // The index is a sorted table; the data follow the same order, as TensorFlow's.
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].name < tensors[b].name; });
  for (size_t i = 0; i < order.size(); ++i) {
    const NamedTensor& nt = tensors[order[i]];
    if (nt.name.empty())
      return FileError(index_path, "a tensor without a name (the empty name holds the header)");
    if (i > 0 && tensors[order[i - 1]].name == nt.name)
      return FileError(index_path, absl::StrCat(Quoted(nt.name), " given twice"));
    if (nt.tensor.device() != core::Device::kCpu)
      return FileError(index_path,
                       absl::StrCat(Quoted(nt.name), " must be copied to the host first"));
  }
  std::vector<SstableEntry> index;
  pb::BundleHeaderProto header;
  header.set_num_shards(1);
  header.set_endianness(pb::BundleHeaderProto::LITTLE);
  header.mutable_version()->set_producer(kBundleVersion);
  index.push_back({"", header.SerializeAsString()});

  const std::string data_tmp = data_path + ".tmp", index_tmp = index_path + ".tmp";
  auto fail = [&](const std::string& path, const std::string& what) {
    std::remove(data_tmp.c_str());
    std::remove(index_tmp.c_str());
    return FileError(path, what);
  };
  {
    std::ofstream data(data_tmp, std::ios::binary | std::ios::trunc);
    if (!data) return fail(data_tmp, "cannot open for writing");
    uint64_t offset = 0;
    for (size_t i : order) {
      const core::Tensor& t = tensors[i].tensor;
      pb::BundleEntryProto entry;
      entry.set_dtype(ToTf(t.dtype()));
      for (int d = 0; d < t.shape().rank(); ++d)
        entry.mutable_shape()->add_dim()->set_size(t.dim(d));
      entry.set_shard_id(0);
      entry.set_offset(static_cast<int64_t>(offset));
      entry.set_size(static_cast<int64_t>(t.bytes()));
      entry.set_crc32c(MaskCrc32c(Crc32c(t.data(), t.bytes())));
      index.push_back({tensors[i].name, entry.SerializeAsString()});
      data.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
      offset += t.bytes();
    }
    data.flush();
    if (!data) return fail(data_tmp, "write failed");
  }
  {
    const std::string table = BuildSstable(index);
    std::ofstream out(index_tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail(index_tmp, "cannot open for writing");
    out.write(table.data(), static_cast<std::streamsize>(table.size()));
    out.flush();
    if (!out) return fail(index_tmp, "write failed");
  }
  if (std::rename(data_tmp.c_str(), data_path.c_str()) != 0)
    return fail(data_path, "cannot rename the temporary file into place");
  if (std::rename(index_tmp.c_str(), index_path.c_str()) != 0)
    return fail(index_path, "cannot rename the temporary file into place");
  return absl::OkStatus();
}

}  // namespace mlperf::io
