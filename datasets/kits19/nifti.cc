#include "datasets/kits19/nifti.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <string>
#include <type_traits>

#include "base/files.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

namespace fs = std::filesystem;
using Shape3 = std::array<int64_t, 3>;

// NIfTI-1 header fields by byte offset (a 348-byte header; what we write puts
// the voxels at 352, after the 4-byte "no extensions" flag).
constexpr int kHeaderSize = 348, kDataAt = 352;
constexpr int kDimAt = 40, kDatatypeAt = 70, kBitpixAt = 72, kPixdimAt = 76;
constexpr int kVoxOffsetAt = 108, kSclSlopeAt = 112, kSclInterAt = 116;
constexpr int kXyztUnitsAt = 123, kQformCodeAt = 252, kSformCodeAt = 254;
constexpr int kSrowAt = 280, kMagicAt = 344, kRegularAt = 38;
constexpr int kUnitsMillimetre = 2, kScannerAnatomical = 1;
// NIfTI datatype codes.
constexpr int kUint8 = 2, kInt16 = 4, kInt32 = 8, kFloat32 = 16, kFloat64 = 64, kInt8 = 256,
              kUint16 = 512, kUint32 = 768;

int BytesOf(int datatype) {
  switch (datatype) {
    case kUint8:
    case kInt8:
      return 1;
    case kInt16:
    case kUint16:
      return 2;
    case kInt32:
    case kUint32:
    case kFloat32:
      return 4;
    case kFloat64:
      return 8;
    default:
      return 0;
  }
}

// The largest volume read: a header may declare up to 32767^3 voxels, and a
// gzip stream may inflate ~1000x, so both are bounded before allocating.
// KiTS19's largest imaging volume (float64) is about 2.2 GB.
constexpr size_t kMaxVolumeBytes = size_t{8} << 30;

absl::StatusOr<std::string> ReadWholeFile(const fs::path& path) {
  return base::ReadSmallFile(path, kMaxVolumeBytes);
}

bool IsGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
         static_cast<uint8_t>(bytes[1]) == 0x8b;
}

// Inflates the members of a gzip file (members may follow one another), at
// most `limit` bytes of them: the rest is neither inflated nor checked.
absl::StatusOr<std::string> Gunzip(const std::string& gz, const std::string& name, size_t limit) {
  // The last member's trailer holds its size mod 2^32: the usual single
  // member's exact size, so one allocation suffices. Deflate cannot shrink
  // data more than ~1032x, which bounds a corrupt trailer's claim.
  size_t capacity = 4 * gz.size() + 1024;
  if (gz.size() >= 18) {
    const auto* t = reinterpret_cast<const uint8_t*>(gz.data() + gz.size() - 4);
    const size_t isize = t[0] | t[1] << 8 | t[2] << 16 | static_cast<size_t>(t[3]) << 24;
    if (isize < 1032 * gz.size()) capacity = std::max(capacity, isize + 1);
  }
  std::string out(std::min(capacity, limit), '\0');
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
    return absl::InternalError(fmt::format("{}: zlib inflateInit2 failed", name));
  size_t in_at = 0, out_at = 0;
  constexpr size_t kMaxChunk = size_t{1} << 30;  // zlib counts in 32-bit uInt
  absl::Status status;
  while (out_at < limit) {
    if (out_at == out.size()) out.resize(std::min(2 * out.size(), limit));
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data() + in_at));
    z.avail_in = static_cast<uInt>(std::min(gz.size() - in_at, kMaxChunk));
    z.next_out = reinterpret_cast<Bytef*>(out.data() + out_at);
    z.avail_out = static_cast<uInt>(std::min(out.size() - out_at, kMaxChunk));
    const uInt avail_in = z.avail_in, avail_out = z.avail_out;
    const int ret = inflate(&z, Z_NO_FLUSH);
    in_at += avail_in - z.avail_in;
    out_at += avail_out - z.avail_out;
    if (ret == Z_OK) continue;
    if (ret == Z_STREAM_END) {
      // Bytes after the last member are ignored, as gzip -d does.
      if (!IsGzip(std::string_view(gz).substr(in_at))) break;
      inflateReset(&z);
      continue;
    }
    // Output space is always left, so a stall means the input ran out.
    if (ret == Z_BUF_ERROR && in_at == gz.size()) {
      status = absl::DataLossError(fmt::format("{}: truncated gzip stream", name));
    } else {
      status = absl::DataLossError(fmt::format("{}: corrupt gzip stream ({})", name,
                                               z.msg != nullptr ? z.msg : "zlib error"));
    }
    break;
  }
  inflateEnd(&z);
  if (!status.ok()) return status;
  out.resize(out_at);
  return out;
}

absl::StatusOr<std::string> Gzip(const std::string& in, const std::string& name) {
  z_stream z{};
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) !=
      Z_OK)
    return absl::InternalError(fmt::format("{}: zlib deflateInit2 failed", name));
  std::string out;
  char buf[1 << 16];
  size_t in_at = 0;
  int ret = Z_OK, flush = Z_NO_FLUSH;
  while (flush != Z_FINISH) {
    const size_t chunk = std::min(in.size() - in_at, size_t{1} << 30);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_at));
    z.avail_in = static_cast<uInt>(chunk);
    in_at += chunk;
    flush = in_at == in.size() ? Z_FINISH : Z_NO_FLUSH;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof(buf);
      ret = deflate(&z, flush);
      out.append(buf, sizeof(buf) - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  if (ret != Z_STREAM_END)
    return absl::InternalError(fmt::format("{}: zlib deflate failed ({})", name, ret));
  return out;
}

template <typename T>
T Load(const char* p, bool swap) {
  unsigned char b[sizeof(T)];
  std::memcpy(b, p, sizeof(T));
  if (swap) std::reverse(b, b + sizeof(T));
  T v;
  std::memcpy(&v, b, sizeof(T));
  return v;
}

template <typename T>
void Store(std::string& h, int at, T v) {
  std::memcpy(h.data() + at, &v, sizeof(T));
}

// Stores the file's voxels (dim[1] fastest) into `out` (dim[3] fastest),
// scaled as nibabel does in float64. Runs of 16 along dim[3] keep both the
// reads (16 streams) and the writes (a cache line) sequential.
template <typename T>
void ToCOrder(const char* data, bool swap, const Shape3& s, bool scaled, double slope, double inter,
              float* out) {
  const auto [n0, n1, n2] = s;
  constexpr int64_t kRun = 16;
  for (int64_t k0 = 0; k0 < n2; k0 += kRun) {
    const int64_t run = std::min(kRun, n2 - k0);
    for (int64_t j = 0; j < n1; ++j) {
      for (int64_t i = 0; i < n0; ++i) {
        float* dst = out + (i * n1 + j) * n2 + k0;
        const char* src = data + static_cast<ptrdiff_t>(sizeof(T)) * ((k0 * n1 + j) * n0 + i);
        for (int64_t r = 0; r < run; ++r, src += static_cast<ptrdiff_t>(sizeof(T)) * n1 * n0) {
          const T v = Load<T>(src, swap);
          dst[r] = scaled ? static_cast<float>(static_cast<double>(v) * slope + inter)
                          : static_cast<float>(v);
        }
      }
    }
  }
}

void Convert(int datatype, const char* data, bool swap, const Shape3& s, bool scaled, double slope,
             double inter, float* out) {
  switch (datatype) {
    case kUint8:
      return ToCOrder<uint8_t>(data, swap, s, scaled, slope, inter, out);
    case kInt8:
      return ToCOrder<int8_t>(data, swap, s, scaled, slope, inter, out);
    case kInt16:
      return ToCOrder<int16_t>(data, swap, s, scaled, slope, inter, out);
    case kUint16:
      return ToCOrder<uint16_t>(data, swap, s, scaled, slope, inter, out);
    case kInt32:
      return ToCOrder<int32_t>(data, swap, s, scaled, slope, inter, out);
    case kUint32:
      return ToCOrder<uint32_t>(data, swap, s, scaled, slope, inter, out);
    case kFloat32:
      return ToCOrder<float>(data, swap, s, scaled, slope, inter, out);
    default:
      return ToCOrder<double>(data, swap, s, scaled, slope, inter, out);
  }
}

// Writes the voxels in file order; integers rounded half away from zero.
template <typename T>
absl::Status FromCOrder(const NiftiVolume& v, const std::string& name, const char* type,
                        char* out) {
  const auto [n0, n1, n2] = v.shape;
  for (int64_t k = 0; k < n2; ++k) {
    for (int64_t j = 0; j < n1; ++j) {
      for (int64_t i = 0; i < n0; ++i, out += sizeof(T)) {
        const float x = v.voxels[static_cast<size_t>((i * n1 + j) * n2 + k)];
        T t;
        if constexpr (std::is_integral_v<T>) {
          const double r = std::round(static_cast<double>(x));
          if (!(r >= std::numeric_limits<T>::lowest() && r <= std::numeric_limits<T>::max())) {
            return absl::InvalidArgumentError(
                fmt::format("{}: voxel ({}, {}, {}) = {} does not fit {}", name, i, j, k, x, type));
          }
          t = static_cast<T>(r);
        } else {
          t = x;
        }
        std::memcpy(out, &t, sizeof(T));
      }
    }
  }
  return absl::OkStatus();
}

// What the header says, checked.
struct Header {
  bool swap = false;
  Shape3 shape{};
  int datatype = 0, bytes = 0;
  size_t voxels_at = 0;
  int64_t count = 0;
};

absl::StatusOr<Header> ReadHeader(std::string_view f, const std::string& name) {
  if (f.size() < kHeaderSize) {
    return absl::DataLossError(
        fmt::format("{}: {} bytes, shorter than a NIfTI-1 header", name, f.size()));
  }
  Header h;
  // The header's own size, 348, says which byte order the file uses.
  h.swap = Load<int32_t>(f.data(), false) != kHeaderSize;
  if (Load<int32_t>(f.data(), h.swap) != kHeaderSize) {
    return absl::DataLossError(fmt::format("{}: not a NIfTI-1 file (sizeof_hdr)", name));
  }
  // "ni1" marks a header whose voxels lie in a separate .img file.
  if (f.compare(kMagicAt, 4, std::string_view("n+1\0", 4)) != 0) {
    return absl::DataLossError(
        fmt::format("{}: not a single-file NIfTI-1 volume (magic, expected \"n+1\")", name));
  }
  const auto dim = [&](int i) { return Load<int16_t>(f.data() + kDimAt + 2 * i, h.swap); };
  if (!(dim(0) == 3 || (dim(0) == 4 && dim(4) == 1))) {
    return absl::InvalidArgumentError(
        fmt::format("{}: header dim[0]={}{}, expected 3", name, dim(0),
                    dim(0) == 4 ? fmt::format(" with dim[4]={}", dim(4)) : ""));
  }
  for (int a = 0; a < 3; ++a) h.shape[a] = dim(a + 1);
  if (h.shape[0] < 1 || h.shape[1] < 1 || h.shape[2] < 1) {
    return absl::InvalidArgumentError(fmt::format("{}: header sizes {}x{}x{}, expected positive",
                                                  name, h.shape[0], h.shape[1], h.shape[2]));
  }
  h.datatype = Load<int16_t>(f.data() + kDatatypeAt, h.swap);
  h.bytes = BytesOf(h.datatype);
  if (h.bytes == 0) {
    return absl::InvalidArgumentError(fmt::format(
        "{}: NIfTI datatype {} is not one of uint8, int8, int16, uint16, int32, uint32, float32, "
        "float64",
        name, h.datatype));
  }
  const float vox_offset = Load<float>(f.data() + kVoxOffsetAt, h.swap);
  if (!(vox_offset >= kHeaderSize && vox_offset <= static_cast<float>(kMaxVolumeBytes)))
    return absl::DataLossError(fmt::format("{}: vox_offset {} outside the file", name, vox_offset));
  h.voxels_at = static_cast<size_t>(vox_offset);
  // Each size is below 2^15, so the product cannot overflow.
  h.count = h.shape[0] * h.shape[1] * h.shape[2];
  if (h.voxels_at + static_cast<size_t>(h.count * h.bytes) > kMaxVolumeBytes) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}x{}x{} voxels of {} bytes, more than the {} GiB a volume may take", name,
                    h.shape[0], h.shape[1], h.shape[2], h.bytes, kMaxVolumeBytes >> 30));
  }
  return h;
}

}  // namespace

absl::StatusOr<NiftiVolume> ReadNifti(const fs::path& path) {
  const std::string name = path.string();
  absl::StatusOr<std::string> file = ReadWholeFile(path);
  if (!file.ok()) return file.status();
  if (IsGzip(*file)) {
    // The header first: it bounds what is inflated (a gzip bomb is refused
    // or cut at the declared size, never allocated whole).
    absl::StatusOr<std::string> head = Gunzip(*file, name, kHeaderSize);
    if (!head.ok()) return head.status();
    absl::StatusOr<Header> h = ReadHeader(*head, name);
    if (!h.ok()) return h.status();
    absl::StatusOr<std::string> inflated =
        Gunzip(*file, name, h->voxels_at + static_cast<size_t>(h->count * h->bytes));
    if (!inflated.ok()) return inflated.status();
    *file = std::move(*inflated);
  }
  const std::string& f = *file;
  absl::StatusOr<Header> h = ReadHeader(f, name);
  if (!h.ok()) return h.status();
  const bool swap = h->swap;
  NiftiVolume v;
  v.shape = h->shape;
  for (int a = 0; a < 3; ++a) v.spacing[a] = Load<float>(f.data() + kPixdimAt + 4 * (a + 1), swap);
  const size_t at = h->voxels_at;
  const int64_t count = h->count;
  const int bytes = h->bytes, datatype = h->datatype;
  if (at > f.size())
    return absl::DataLossError(fmt::format("{}: vox_offset {} outside the file", name, at));
  if ((f.size() - at) / static_cast<size_t>(bytes) < static_cast<size_t>(count)) {
    return absl::DataLossError(
        fmt::format("{}: truncated: {} bytes of voxel data, {}x{}x{} need {}", name, f.size() - at,
                    v.shape[0], v.shape[1], v.shape[2], count * bytes));
  }
  // nibabel scales unless the slope is 0 or not finite, and refuses a
  // non-finite intercept beside a valid slope.
  const float slope = Load<float>(f.data() + kSclSlopeAt, swap),
              inter = Load<float>(f.data() + kSclInterAt, swap);
  const bool scaled = slope != 0 && std::isfinite(slope);
  if (scaled && !std::isfinite(inter)) {
    return absl::InvalidArgumentError(
        fmt::format("{}: scl_slope {} with a non-finite scl_inter {}", name, slope, inter));
  }
  v.voxels.resize(static_cast<size_t>(count));
  Convert(datatype, f.data() + at, swap, v.shape, scaled, slope, inter, v.voxels.data());
  return v;
}

absl::Status WriteNifti(const fs::path& path, const NiftiVolume& v, NiftiDtype dtype) {
  const std::string name = path.string();
  const auto [n0, n1, n2] = v.shape;
  for (int a = 0; a < 3; ++a) {
    if (v.shape[a] < 1 || v.shape[a] > std::numeric_limits<int16_t>::max()) {
      return absl::InvalidArgumentError(
          fmt::format("{}: shape {}x{}x{}, NIfTI-1 takes sizes 1..32767", name, n0, n1, n2));
    }
    if (!(v.spacing[a] > 0) || !std::isfinite(v.spacing[a])) {
      return absl::InvalidArgumentError(fmt::format("{}: spacing {} mm", name, v.spacing[a]));
    }
  }
  if (v.voxels.size() != static_cast<size_t>(n0 * n1 * n2)) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {} voxels for shape {}x{}x{}", name, v.voxels.size(), n0, n1, n2));
  }
  const int datatype = dtype == NiftiDtype::kUint8   ? kUint8
                       : dtype == NiftiDtype::kInt16 ? kInt16
                                                     : kFloat32;
  const int bytes = BytesOf(datatype);
  std::string file(kDataAt + static_cast<size_t>(n0 * n1 * n2 * bytes), '\0');
  Store<int32_t>(file, 0, kHeaderSize);
  file[kRegularAt] = 'r';
  const int16_t dims[8] = {
      3, static_cast<int16_t>(n0), static_cast<int16_t>(n1), static_cast<int16_t>(n2), 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) Store<int16_t>(file, kDimAt + 2 * i, dims[i]);
  Store<int16_t>(file, kDatatypeAt, static_cast<int16_t>(datatype));
  Store<int16_t>(file, kBitpixAt, static_cast<int16_t>(8 * bytes));
  // pixdim[0] is the qform's handedness (qfac): 1 with the identity rotation.
  const float pixdim[4] = {1.0f, static_cast<float>(v.spacing[0]), static_cast<float>(v.spacing[1]),
                           static_cast<float>(v.spacing[2])};
  for (int i = 0; i < 4; ++i) Store<float>(file, kPixdimAt + 4 * i, pixdim[i]);
  Store<float>(file, kVoxOffsetAt, static_cast<float>(kDataAt));
  Store<float>(file, kSclSlopeAt, 1.0f);
  file[kXyztUnitsAt] = kUnitsMillimetre;
  // Both affines: the spacing on the diagonal, the origin at voxel 0 (the
  // quaternion and offsets stay zero).
  Store<int16_t>(file, kQformCodeAt, kScannerAnatomical);
  Store<int16_t>(file, kSformCodeAt, kScannerAnatomical);
  for (int r = 0; r < 3; ++r) Store<float>(file, kSrowAt + 16 * r + 4 * r, pixdim[r + 1]);
  std::memcpy(file.data() + kMagicAt, "n+1", 4);
  char* out = file.data() + kDataAt;
  absl::Status stored = dtype == NiftiDtype::kUint8   ? FromCOrder<uint8_t>(v, name, "uint8", out)
                        : dtype == NiftiDtype::kInt16 ? FromCOrder<int16_t>(v, name, "int16", out)
                                                      : FromCOrder<float>(v, name, "float32", out);
  if (!stored.ok()) return stored;
  if (path.extension() != ".gz") return base::WriteFileAtomically(path, file);
  absl::StatusOr<std::string> compressed = Gzip(file, name);
  if (!compressed.ok()) return compressed.status();
  return base::WriteFileAtomically(path, *compressed);
}

}  // namespace mlperf::kits19
