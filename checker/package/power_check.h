// The power checker (spec 7.4, HEAD; only when <benchmark>/power/ exists):
// each run has power/result_N/ with node_<i> and sw_<i> files numbered from
// 0, and all runs have the same number of node and sw files.
#pragma once

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace mlperf::package {

struct PowerCheck {
  std::set<std::string> failed_runs;  // result file stems, e.g. "result_3"
  std::vector<std::string> warnings;  // why each run failed, and naming notes
  std::vector<std::string> errors;    // where the official checker raises (no verdict)
};

// `result_stems` in the order the runs are read (sorted).
PowerCheck CheckPower(const std::filesystem::path& power_dir,
                      const std::vector<std::string>& result_stems);

}  // namespace mlperf::package
