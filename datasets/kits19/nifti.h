// NIfTI-1 volumes (.nii, or gzip-compressed .nii.gz), as KiTS19 ships its
// imaging and segmentation: read as nibabel's get_fdata() gives them (axes
// dim[1], dim[2], dim[3] in C order, scl_slope and scl_inter applied), and
// written for the embedded demonstration's generated cases.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace mlperf::kits19 {

struct NiftiVolume {
  std::array<int64_t, 3> shape{};   // dim[1], dim[2], dim[3]
  std::array<double, 3> spacing{};  // pixdim[1..3], as the reference reads it
  std::vector<float> voxels;        // C order over shape
};

enum class NiftiDtype { kUint8, kInt16, kFloat32 };

// An error names the file and what is wrong (not NIfTI-1, truncated gzip
// stream or data, dim[0] other than 3, an unsupported datatype).
absl::StatusOr<NiftiVolume> ReadNifti(const std::filesystem::path& path);

// gzip-compressed when the name ends in ".gz"; written atomically. Values
// are rounded to the dtype (no scaling).
absl::Status WriteNifti(const std::filesystem::path& path, const NiftiVolume& volume,
                        NiftiDtype dtype);

}  // namespace mlperf::kits19
