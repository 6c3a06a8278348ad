#include "datasets/kits19/nifti.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "base/files.h"
#include "fmt/format.h"

namespace mlperf::kits19 {
namespace {

// NIfTI-1 header fields by byte offset (348-byte header, data at vox_offset).
constexpr int kHeaderSize = 348;
constexpr int kDimAt = 40, kDatatypeAt = 70, kBitpixAt = 72, kPixdimAt = 76;
constexpr int kVoxOffsetAt = 108, kSclSlopeAt = 112, kSclInterAt = 116;
constexpr int kXyztUnitsAt = 123, kQformCodeAt = 252, kSformCodeAt = 254;
constexpr int kSrowAt = 280, kMagicAt = 344;
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

// Reads the whole file, inflating it if it is gzip-compressed (zlib reads
// plain files through the same calls).
absl::StatusOr<std::string> ReadMaybeGzip(const std::filesystem::path& path) {
  const std::string name = path.string();
  gzFile f = gzopen(name.c_str(), "rb");
  if (f == nullptr) return absl::NotFoundError(fmt::format("{}: cannot open", name));
  std::string data;
  char buf[1 << 16];
  int got = 0;
  while ((got = gzread(f, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(got));
  // A truncated stream ends the reads early and leaves an error behind.
  int code = Z_OK;
  const std::string error = gzerror(f, &code);
  const int closed = gzclose(f);
  if (got < 0 || (code != Z_OK && code != Z_STREAM_END) || closed != Z_OK) {
    return absl::DataLossError(fmt::format("{}: truncated or corrupt gzip stream{}", name,
                                           error.empty() ? "" : " (" + error + ")"));
  }
  return data;
}

template <typename T>
T Field(const std::string& h, int at, bool swap) {
  T v;
  std::memcpy(&v, h.data() + at, sizeof(T));
  if (swap) {
    auto* b = reinterpret_cast<unsigned char*>(&v);
    for (size_t i = 0; i < sizeof(T) / 2; ++i) std::swap(b[i], b[sizeof(T) - 1 - i]);
  }
  return v;
}

template <typename T>
void Put(std::string& h, int at, T v) {
  std::memcpy(h.data() + at, &v, sizeof(T));
}

double Element(const char* p, int datatype, bool swap) {
  unsigned char b[8];
  const int n = BytesOf(datatype);
  std::memcpy(b, p, static_cast<size_t>(n));
  if (swap) std::reverse(b, b + n);
  switch (datatype) {
    case kUint8:
      return b[0];
    case kInt8:
      return static_cast<int8_t>(b[0]);
    case kInt16: {
      int16_t v;
      std::memcpy(&v, b, 2);
      return v;
    }
    case kUint16: {
      uint16_t v;
      std::memcpy(&v, b, 2);
      return v;
    }
    case kInt32: {
      int32_t v;
      std::memcpy(&v, b, 4);
      return v;
    }
    case kUint32: {
      uint32_t v;
      std::memcpy(&v, b, 4);
      return v;
    }
    case kFloat32: {
      float v;
      std::memcpy(&v, b, 4);
      return v;
    }
    default: {
      double v;
      std::memcpy(&v, b, 8);
      return v;
    }
  }
}

absl::Status Gzip(const std::string& in, std::string* out) {
  z_stream z{};
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return absl::InternalError("deflateInit2 failed");
  out->resize(deflateBound(&z, in.size()) + 64);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out->data());
  z.avail_out = static_cast<uInt>(out->size());
  const int r = deflate(&z, Z_FINISH);
  out->resize(z.total_out);
  deflateEnd(&z);
  return r == Z_STREAM_END ? absl::OkStatus() : absl::InternalError("deflate failed");
}

}  // namespace

absl::StatusOr<NiftiVolume> ReadNifti(const std::filesystem::path& path) {
  const std::string name = path.string();
  absl::StatusOr<std::string> file = ReadMaybeGzip(path);
  if (!file.ok()) return file.status();
  const std::string& f = *file;
  if (f.size() < kHeaderSize)
    return absl::DataLossError(
        fmt::format("{}: {} bytes, shorter than a NIfTI-1 header", name, f.size()));
  // The header's own size says which byte order the file uses.
  const bool swap = Field<int32_t>(f, 0, false) != kHeaderSize;
  if (Field<int32_t>(f, 0, swap) != kHeaderSize ||
      (f.compare(kMagicAt, 3, "n+1") != 0 && f.compare(kMagicAt, 3, "ni1") != 0)) {
    return absl::DataLossError(fmt::format("{}: not a single-file NIfTI-1 volume", name));
  }
  const auto dims = Field<int16_t>(f, kDimAt, swap);
  NiftiVolume v;
  for (int a = 0; a < 3; ++a) v.shape[a] = Field<int16_t>(f, kDimAt + 2 * (a + 1), swap);
  const int16_t dim4 = Field<int16_t>(f, kDimAt + 8, swap);
  if (!(dims == 3 || (dims == 4 && dim4 == 1)) || v.shape[0] < 1 || v.shape[1] < 1 ||
      v.shape[2] < 1) {
    return absl::InvalidArgumentError(
        fmt::format("{}: header dim[0]={} with sizes {}x{}x{}, expected a 3D volume", name, dims,
                    v.shape[0], v.shape[1], v.shape[2]));
  }
  const int datatype = Field<int16_t>(f, kDatatypeAt, swap);
  const int bytes = BytesOf(datatype);
  if (bytes == 0)
    return absl::InvalidArgumentError(
        fmt::format("{}: NIfTI datatype {} is not supported", name, datatype));
  for (int a = 0; a < 3; ++a) v.spacing[a] = Field<float>(f, kPixdimAt + 4 * (a + 1), swap);
  const float vox_offset = Field<float>(f, kVoxOffsetAt, swap);
  if (!(vox_offset >= kHeaderSize) || vox_offset > static_cast<float>(f.size()))
    return absl::DataLossError(fmt::format("{}: vox_offset {} outside the file", name, vox_offset));
  const auto at = static_cast<size_t>(vox_offset);
  const int64_t count = v.shape[0] * v.shape[1] * v.shape[2];
  if ((f.size() - at) / static_cast<size_t>(bytes) < static_cast<size_t>(count)) {
    return absl::DataLossError(
        fmt::format("{}: truncated: {} bytes of voxel data, {}x{}x{} need {}", name, f.size() - at,
                    v.shape[0], v.shape[1], v.shape[2], count * bytes));
  }
  // nibabel applies the scaling unless the slope is 0 or not finite.
  const float slope = Field<float>(f, kSclSlopeAt, swap),
              inter = Field<float>(f, kSclInterAt, swap);
  const bool scaled = slope != 0 && std::isfinite(slope);
  const double s = scaled ? slope : 1.0, b = scaled && std::isfinite(inter) ? inter : 0.0;
  v.voxels.resize(static_cast<size_t>(count));
  // The file runs dim[1] fastest; ours runs dim[3] fastest.
  const auto [n0, n1, n2] = v.shape;
  const char* data = f.data() + at;
  for (int64_t k = 0; k < n2; ++k)
    for (int64_t j = 0; j < n1; ++j)
      for (int64_t i = 0; i < n0; ++i, data += bytes)
        v.voxels[static_cast<size_t>((i * n1 + j) * n2 + k)] =
            static_cast<float>(Element(data, datatype, swap) * s + b);
  return v;
}

absl::Status WriteNifti(const std::filesystem::path& path, const NiftiVolume& v, NiftiDtype dtype) {
  const auto [n0, n1, n2] = v.shape;
  const int datatype = dtype == NiftiDtype::kUint8   ? kUint8
                       : dtype == NiftiDtype::kInt16 ? kInt16
                                                     : kFloat32;
  const int bytes = BytesOf(datatype);
  std::string file(352, '\0');  // header and the empty extension flag
  Put<int32_t>(file, 0, kHeaderSize);
  const int16_t dim[8] = {
      3, static_cast<int16_t>(n0), static_cast<int16_t>(n1), static_cast<int16_t>(n2), 1, 1, 1, 1};
  for (int i = 0; i < 8; ++i) Put<int16_t>(file, kDimAt + 2 * i, dim[i]);
  Put<int16_t>(file, kDatatypeAt, static_cast<int16_t>(datatype));
  Put<int16_t>(file, kBitpixAt, static_cast<int16_t>(8 * bytes));
  const float pixdim[4] = {1.0f, static_cast<float>(v.spacing[0]), static_cast<float>(v.spacing[1]),
                           static_cast<float>(v.spacing[2])};
  for (int i = 0; i < 4; ++i) Put<float>(file, kPixdimAt + 4 * i, pixdim[i]);
  Put<float>(file, kVoxOffsetAt, 352.0f);
  Put<float>(file, kSclSlopeAt, 1.0f);
  file[kXyztUnitsAt] = 2;  // millimetres
  // The affine: the spacing on the diagonal (sform, scanner coordinates).
  Put<int16_t>(file, kQformCodeAt, 0);
  Put<int16_t>(file, kSformCodeAt, 1);
  for (int r = 0; r < 3; ++r) Put<float>(file, kSrowAt + 16 * r + 4 * r, pixdim[r + 1]);
  std::memcpy(file.data() + kMagicAt, "n+1", 4);
  file.resize(352 + static_cast<size_t>(n0 * n1 * n2 * bytes));
  char* out = file.data() + 352;
  for (int64_t k = 0; k < n2; ++k)
    for (int64_t j = 0; j < n1; ++j)
      for (int64_t i = 0; i < n0; ++i, out += bytes) {
        const float x = v.voxels[static_cast<size_t>((i * n1 + j) * n2 + k)];
        if (datatype == kUint8) {
          *reinterpret_cast<uint8_t*>(out) = static_cast<uint8_t>(std::lround(x));
        } else if (datatype == kInt16) {
          const auto s = static_cast<int16_t>(std::lround(x));
          std::memcpy(out, &s, 2);
        } else {
          std::memcpy(out, &x, 4);
        }
      }
  if (path.extension() != ".gz") return base::WriteFileAtomically(path, file);
  std::string compressed;
  if (absl::Status s = Gzip(file, &compressed); !s.ok()) return s;
  return base::WriteFileAtomically(path, compressed);
}

}  // namespace mlperf::kits19
