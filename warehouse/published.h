// Published time-to-train scores (the layout of official_time_to_train.csv,
// which compliance_check --claims also reads) into published_scores, so that
// the score-diffs query can set them against the recomputed ones.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {

// Stores every row in one transaction (a row already there is replaced);
// returns how many. A file that does not parse stores nothing.
absl::StatusOr<int> ImportPublished(Database& db, const std::string& path);

}  // namespace mlperf::warehouse
