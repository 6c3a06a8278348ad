// The embedded demonstration's data set: click logs generated in the
// reference's day-file layout (day_files.h), with a planted signal a small
// DLRM learns. Each sample's click probability is the sigmoid of a logit
// made of two dense features and a per-row effect in every fourth
// categorical feature (summed over its multi-hot ids, scaled by
// 1/sqrt(multi-hot)); the other features are noise. Dense features are
// log(1 + count) of counts spread over three decades, as the reference's
// preprocessing leaves them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace mlperf::criteo {

struct GeneratedCriteoOptions {
  int days = 3;  // the last one evaluates
  int64_t rows_per_day = 40000;
  std::vector<int64_t> table_rows;  // per categorical feature
  std::vector<int64_t> multi_hot;
  double signal = 1.0;  // scales every planted effect
  uint64_t seed = 1;

  // A folder name that changes with every option (the cache key).
  std::string Name() const;
};

// Writes the day files into `dir` (created as needed; each file replaced atomically).
absl::Status WriteGeneratedCriteo(const std::filesystem::path& dir,
                                  const GeneratedCriteoOptions& options);

}  // namespace mlperf::criteo
