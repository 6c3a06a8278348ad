// The reference's offline KiTS19 preprocessing (untimed under the rules):
// resample to spacing 1.6 x 1.2 x 1.2 mm when the case's differs (trilinear
// with aligned corners for the image, nearest for the labels), clip the image
// to [-79, 304] HU and normalise it with (x - 101) / 76.9, pad every axis
// shorter than 128 to 128 with edge values (centred, the odd voxel after),
// and write case_XXXXX_x.npy (float32) and _y.npy (uint8), shape (1, D, H, W).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "datasets/kits19/nifti.h"

namespace mlperf::kits19 {

struct PrepareOptions {
  std::array<double, 3> target_spacing = {1.6, 1.2, 1.2};
  int64_t min_size = 128;  // the training and evaluation ROI
};

struct PreparedCase {
  std::array<int64_t, 3> shape{};
  std::vector<float> image;
  std::vector<uint8_t> label;
};

// `name` is used in errors (e.g. the case folder).
absl::StatusOr<PreparedCase> PrepareCase(const NiftiVolume& image, const NiftiVolume& label,
                                         const PrepareOptions& options, const std::string& name);

// Every case_XXXXX folder under kits_root (or kits_root/data) with
// imaging.nii.gz and segmentation.nii.gz, prepared into out_dir on `threads`
// threads. A case folder missing either file is an error naming it.
absl::Status PrepareTree(const std::filesystem::path& kits_root,
                         const std::filesystem::path& out_dir, const PrepareOptions& options,
                         int threads);

// One prepared case, checked: dtypes float32 and uint8, shapes (1, D, H, W) alike.
absl::StatusOr<PreparedCase> LoadPreparedCase(const std::filesystem::path& x_npy,
                                              const std::filesystem::path& y_npy);

}  // namespace mlperf::kits19
