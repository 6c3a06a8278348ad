// The embedded demonstration's data set: KiTS19-like cases written as the
// raw KiTS19 tree (case_XXXXX/imaging.nii.gz in Hounsfield units, int16, and
// segmentation.nii.gz, uint8) and prepared like KiTS19. The spacing is the
// target's: as for such a real case, the header's fp32 spacing differs from
// the target in the last bits, so the reference resamples, to the same shape
// (an identity). Resampling to another grid would shift label edges against
// image edges by up to half a voxel, which small structures cannot afford.
// Each case holds an ellipsoidal "kidney" (label 1) with a spherical
// "tumour" (label 2) on its surface, brighter than the kidney, in noisy
// darker tissue: structures a small 3D U-Net learns to segment.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>

#include "absl/status/status.h"

namespace mlperf::kits19 {

struct GeneratedKits19Options {
  int cases = 210;  // case_00000 .. case_00209; the 42 of eval_cases.h evaluate
  std::array<int64_t, 3> shape = {14, 14, 14};      // raw voxels per axis, each +0..3 per case
  std::array<double, 3> spacing = {1.6, 1.2, 1.2};  // mm
  double noise_hu = 10;                             // standard deviation of the tissue noise
  uint64_t seed = 1;

  // A folder name that changes with every option (the cache key).
  std::string Name() const;
};

// Writes the tree under `root` (case folders created as needed; files
// replaced atomically).
absl::Status WriteGeneratedKits19(const std::filesystem::path& root,
                                  const GeneratedKits19Options& options);

}  // namespace mlperf::kits19
