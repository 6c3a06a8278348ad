// NumPy's .npz archives as np.savez writes them: an uncompressed ZIP (ZIP64
// for members past 4 GiB) of .npy members. The reference's Criteo
// preprocessing stores each day's multi-hot ids so (day_N_sparse_multi_hot.npz,
// members "0.npy" to "25.npy"), and its loader maps the members in place;
// so does ours, reading no element here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "datasets/npy.h"

namespace mlperf::criteo {

// Each member's array header, by member name; data_offset is in the archive.
// An error names the archive and what is wrong (not a ZIP, a compressed
// member, a truncated one, a bad .npy header).
absl::StatusOr<std::map<std::string, datasets::NpyArray>> ReadNpzHeaders(
    const std::filesystem::path& path);

// Writes an uncompressed archive of .npy members (name, bytes of the .npy as
// datasets::NpyBytes gives them), atomically, as np.savez would store them;
// members and archive under 4 GiB.
absl::Status WriteNpz(const std::filesystem::path& path,
                      const std::vector<std::pair<std::string, std::string>>& members);

}  // namespace mlperf::criteo
