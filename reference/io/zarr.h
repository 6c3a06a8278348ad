// Zarr (format 2) arrays as Megatron's distributed checkpoints write them
// (the GPT-3 reference's): a folder per tensor holding `.zarray` (shape,
// chunk shape, dtype, compressor, fill value, order) and one file per chunk
// named by its indices ("0.3.1", or "0/3/1" with the "/" separator), each the
// whole chunk in C order even at the array's edges. Only what those
// checkpoints use is read: no compressor and no filters, C order, little-
// endian float32 or float16, or "bfloat16" (Megatron's name for it). A chunk
// file that is missing reads as the fill value (refused when it is null).
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::io {

class ZarrArray {
 public:
  // Reads and checks `.zarray`; errors name the folder.
  static absl::StatusOr<ZarrArray> Open(const std::filesystem::path& dir);

  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& chunks() const { return chunks_; }
  const std::string& dtype() const { return dtype_; }
  const std::filesystem::path& dir() const { return dir_; }

  // The box [first, first + count) (one entry per dimension) widened to
  // fp32 into `out`, C order, out.size() its element count. Only the chunks
  // the box touches are read, and of them only the runs it needs.
  absl::Status Read(std::span<const int64_t> first, std::span<const int64_t> count,
                    std::span<float> out) const;
  // The whole array.
  absl::Status ReadAll(std::span<float> out) const;

 private:
  std::filesystem::path dir_;
  std::vector<int64_t> shape_, chunks_;
  std::string dtype_;
  int item_bytes_ = 4;
  bool has_fill_ = false;
  float fill_ = 0.0f;
  char separator_ = '.';
};

// Writes `data` (C order, `shape`) as a Zarr array in folder `dir` the way
// the reader above reads it: float32, one chunk, no compressor. The folder
// must not exist yet (nothing is replaced); each file is written whole or
// not at all.
absl::Status WriteZarrArray(const std::filesystem::path& dir, std::span<const int64_t> shape,
                            std::span<const float> data);

}  // namespace mlperf::io
