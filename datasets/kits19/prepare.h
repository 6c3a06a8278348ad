// The reference's offline KiTS19 preprocessing (untimed under the rules),
// retired_benchmarks/unet3d/pytorch/preprocess_dataset.py: resample to
// spacing 1.6 x 1.2 x 1.2 mm when the case's differs (trilinear with aligned
// corners for the image, nearest for the labels), clip the image to
// [-79, 304] HU and normalise it with (x - 101) / 76.9, pad every axis
// shorter than 128 to 128 with edge values (centred, the odd voxel after),
// and write case_XXXXX_x.npy (float32) and _y.npy (uint8), shape (1, D, H, W).
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
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
  std::vector<float> image;    // normalised, C order
  std::vector<uint8_t> label;  // 0 background, 1 kidney, 2 tumour
};

// One case, from the image's spacing (the label's is not read, as in the
// reference). Errors (shapes that differ, labels other than 0, 1, 2, a
// spacing that resamples to nothing or too much) start with `name`.
absl::StatusOr<PreparedCase> PrepareCase(const NiftiVolume& image, const NiftiVolume& label,
                                         const PrepareOptions& options,
                                         const std::string& name = "case");

// Prepares every case_XXXXX folder directly under kits_root, or under
// kits_root/data when kits_root has none (the layout of a KiTS19 checkout),
// into out_dir, one case per thread on `threads` threads. As in the
// reference, ids 210 and above (KiTS19's test cases, which have no
// segmentation) are skipped. A case folder missing imaging.nii.gz or
// segmentation.nii.gz is an error naming the file. Each thread holds one
// case in memory, a few GB for the largest KiTS19 volumes.
absl::Status PrepareTree(const std::filesystem::path& kits_root,
                         const std::filesystem::path& out_dir, const PrepareOptions& options,
                         int threads);

// One prepared case, checked: dtypes '<f4' and '|u1', shapes (1, D, H, W)
// and alike.
absl::StatusOr<PreparedCase> LoadPreparedCase(const std::filesystem::path& x_npy,
                                              const std::filesystem::path& y_npy);
// The same checks from the headers alone (and the files' sizes): the case's
// (D, H, W).
absl::StatusOr<std::array<int64_t, 3>> CheckPreparedCase(const std::filesystem::path& x_npy,
                                                         const std::filesystem::path& y_npy);

}  // namespace mlperf::kits19
