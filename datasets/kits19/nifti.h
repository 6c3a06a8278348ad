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
  std::array<double, 3> spacing{};  // pixdim[1..3] (fp32 in the file), as the reference reads it
  std::vector<float> voxels;        // C order over shape
};

enum class NiftiDtype { kUint8, kInt16, kFloat32 };

// Either byte order; gzip is recognised by its magic bytes, not the name.
// Datatypes uint8, int8, int16, uint16, int32, uint32, float32, float64;
// dim[0] 3, or 4 with dim[4] 1. An error is one line naming the file and
// what is wrong (truncated or corrupt gzip stream, not NIfTI-1, dim[0],
// sizes, datatype, vox_offset, truncated voxel data, a non-finite scl_inter).
absl::StatusOr<NiftiVolume> ReadNifti(const std::filesystem::path& path);

// gzip-compressed when the name ends in ".gz"; written atomically with
// vox_offset 352 and qform = sform = diag(spacing). Integer dtypes take the
// values rounded half away from zero; a value that does not fit is an error
// (no scaling is written).
absl::Status WriteNifti(const std::filesystem::path& path, const NiftiVolume& volume,
                        NiftiDtype dtype);

}  // namespace mlperf::kits19
