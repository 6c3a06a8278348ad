// Ingest: a submission package (an organisation folder as MLCommons publishes
// it, or one run_closed wrote) checked by compliance_check's own package
// checker and stored, in one transaction, with its provenance.
//
// A package is known by "<round>/<organisation folder>" ("v3.0/NVIDIA"):
// ingesting the same files again changes nothing, a package whose files
// changed replaces its rows, and an ingest cut short (an error, a crash, a
// signal) leaves the database as it was before that package.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "checker/package/package_check.h"
#include "checker/rule_library.h"
#include "warehouse/database.h"

namespace mlperf::warehouse {

struct IngestOptions {
  package::PackageOptions check;      // ruleset, bypasses, threads
  std::optional<std::string> commit;  // --commit; else the git work tree's, when there is one
  bool force = false;                 // re-check even when nothing changed
};

enum class IngestOutcome { kStored, kReplaced, kUnchanged };

struct IngestResult {
  std::string package;  // "v3.0/NVIDIA"
  IngestOutcome outcome = IngestOutcome::kStored;
  std::string verdict;  // PASS / FAIL
  bool input_error = false;
  std::string first_error;  // the checker's first input error, for stderr
  int results = 0, runs = 0;
};

// "v" + the ruleset's round ("3.0.0" -> "v3.0") / the organisation's folder name.
std::string PackageKey(const std::string& ruleset, const std::filesystem::path& org);

// Checks and stores one organisation folder. An error only when nothing was
// stored (the database refused, a file could not be hashed).
absl::StatusOr<IngestResult> IngestPackage(Database& db, const std::filesystem::path& org,
                                           const checker::RuleLibrary& rules,
                                           const IngestOptions& options);

// A folder that looks like a package but cannot be checked (results/ without
// systems/): stored as a package with its input error, so that it shows.
absl::StatusOr<IngestResult> IngestUncheckable(Database& db, const std::filesystem::path& org,
                                               const std::string& ruleset, const std::string& why);

}  // namespace mlperf::warehouse
