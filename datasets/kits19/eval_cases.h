// KiTS19's split as the 3D U-Net reference fixes it: 42 evaluation cases
// (its evaluation_cases.txt), the other 168 of cases 0..209 for training.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::kits19 {

bool IsEvaluationCase(int case_id);

// "case_00042" -> 42; -1 for any other name.
int CaseId(const std::string& name);

struct CaseSplit {
  std::vector<std::string> train, eval;  // case names ("case_00000"), sorted
};

// The prepared cases under `dir` (case_XXXXX_x.npy with its _y.npy),
// split by IsEvaluationCase. A missing partner file is an error naming it.
absl::StatusOr<CaseSplit> ListPreparedCases(const std::filesystem::path& dir);

}  // namespace mlperf::kits19
