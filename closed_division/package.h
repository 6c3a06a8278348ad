// The submission package on disk (mlperf_logging.md 7.1):
//   <out>/<submitter>/results/<system>/<benchmark>/result_<i>.txt
//   <out>/<submitter>/systems/<system>.json
//   <out>/<submitter>/README.md
// and the rule that an earlier result is never overwritten: a run writes
// result_<i>.txt.incomplete line by line and only a finished log is renamed
// to result_<i>.txt, so the package never holds a broken log.
#pragma once

#include <filesystem>
#include <string>

#include "absl/status/status.h"

namespace mlperf::closed {

struct PackagePaths {
  std::filesystem::path org;         // <out>/<submitter>
  std::filesystem::path result_dir;  // results/<system>/<benchmark>
  std::filesystem::path system_json;
  std::filesystem::path readme;

  std::filesystem::path Result(int run) const;      // result_<run>.txt
  std::filesystem::path Incomplete(int run) const;  // result_<run>.txt.incomplete
};

PackagePaths MakePackagePaths(const std::string& out_dir, const std::string& submitter,
                              const std::string& system, const std::string& benchmark);

// FailedPrecondition naming the first result log (finished or incomplete)
// already in the result folder, or an existing systems/<system>.json that
// differs from `system_json`: run_closed refuses rather than overwrite or mix
// runs of two invocations. Writes nothing.
absl::Status CheckNothingToOverwrite(const PackagePaths& paths, const std::string& system_json);

// Creates the folders, writes systems/<system>.json (an identical existing
// file is kept) and the README
// (written when absent; an existing one gets `readme_section` appended once).
absl::Status PreparePackage(const PackagePaths& paths, const std::string& system_json,
                            const std::string& readme_section);

// Renames result_<run>.txt.incomplete to result_<run>.txt; never replaces an
// existing file.
absl::Status CommitResult(const PackagePaths& paths, int run);

}  // namespace mlperf::closed
