// NumPy's .npy files (format versions 1 and 2, C order) holding float32
// ('<f4'), int32 ('<i4'), int64 ('<i8') or uint8 ('|u1') arrays: what the references'
// preprocessing writes for KiTS19 (case_XXXXX_x.npy and _y.npy) and for
// Criteo (day_N_dense.npy, day_N_labels.npy, and the members of
// day_N_sparse_multi_hot.npz).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::datasets {

struct NpyArray {
  std::string dtype;  // "<f4", "<i4", "<i8" or "|u1"
  std::vector<int64_t> shape;
  std::string bytes;         // the elements, C order
  uint64_t data_offset = 0;  // where the elements start in the file
};

// Bytes per element of a dtype this reader takes, 0 for any other.
int64_t NpyElementSize(const std::string& dtype);

// An error names the file and what is wrong (magic, header, dtype, order,
// truncated data).
absl::StatusOr<NpyArray> ReadNpy(const std::filesystem::path& path);
// The same checks without reading the elements (bytes stays empty): whether
// the file is a whole array of its dtype and shape.
absl::StatusOr<NpyArray> ReadNpyHeader(const std::filesystem::path& path);
// The header of an array stored whole in `size` bytes at `offset` of `path`
// (a member of an uncompressed .npz archive); data_offset is in the file.
absl::StatusOr<NpyArray> ReadNpyHeaderAt(const std::filesystem::path& path, uint64_t offset,
                                         uint64_t size);

// The bytes np.save writes for the array (format 1.0).
absl::StatusOr<std::string> NpyBytes(const std::string& dtype, const std::vector<int64_t>& shape,
                                     const void* data);

// Writes format 1.0 byte for byte as np.save does (the reference checks its
// prepared files against MD5 sums), atomically (a temporary file, then a
// rename). `data` holds the elements in C order.
absl::Status WriteNpy(const std::filesystem::path& path, const std::string& dtype,
                      const std::vector<int64_t>& shape, const void* data);

}  // namespace mlperf::datasets
