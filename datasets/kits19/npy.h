// NumPy's .npy files (format versions 1 and 2, C order) holding float32
// ('<f4') or uint8 ('|u1') arrays: what the reference's preprocessing writes
// for KiTS19 (case_XXXXX_x.npy and _y.npy).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::kits19 {

struct NpyArray {
  std::string dtype;  // "<f4" or "|u1"
  std::vector<int64_t> shape;
  std::string bytes;  // the elements, C order
};

// An error names the file and what is wrong (magic, header, dtype, order,
// truncated data).
absl::StatusOr<NpyArray> ReadNpy(const std::filesystem::path& path);
// The same checks without reading the elements (bytes stays empty): whether
// the file is a whole array of its dtype and shape.
absl::StatusOr<NpyArray> ReadNpyHeader(const std::filesystem::path& path);

// Writes format 1.0 byte for byte as np.save does (the reference checks its
// prepared files against MD5 sums), atomically (a temporary file, then a
// rename). `data` holds the elements in C order.
absl::Status WriteNpy(const std::filesystem::path& path, const std::string& dtype,
                      const std::vector<int64_t>& shape, const void* data);

}  // namespace mlperf::kits19
