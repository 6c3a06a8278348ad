// Checks published time-to-train claims against the scores we compute: does
// a claimed number equal the raw olympic mean, the RCP-normalised score, both,
// or neither (within 0.001 minutes), and by how much does it differ.
// Published tables predate some RCP scaling factors (e.g. v3.0 resnet), so
// the raw mean is a legitimate match, reported as such.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::package {

inline constexpr double kClaimToleranceMinutes = 0.001;

struct Claim {
  std::string version;    // round, e.g. "3.0"
  std::string submitter;  // org folder, e.g. "NVIDIA"
  std::string system;     // results/<system> folder name
  std::string benchmark;
  double minutes = 0;
  // The CSV's other columns (name, value), carried through to the report.
  std::vector<std::pair<std::string, std::string>> other_columns;
};

// What we computed for the claim's directory; `unavailable` says why there
// is no score when both numbers are missing (no such directory, too many
// non-compliant runs, ...).
struct ComputedScore {
  std::optional<double> olympic_mean;  // before scaling
  std::optional<double> normalized;    // olympic_mean * scaling factor
  double scaling_factor = 1.0;
  std::string unavailable;
};

enum class ClaimMatch {
  kNormalized,  // equals the normalised score (and the raw mean, if the factor is ~1)
  kRaw,         // equals the raw olympic mean only: the claim predates the scaling factor
  kNeither,
  kUncheckable,
};

std::string_view ClaimMatchName(ClaimMatch m);  // "normalized", "raw", "neither", "uncheckable"

struct ClaimAudit {
  Claim claim;
  ClaimMatch match = ClaimMatch::kUncheckable;
  // claim - computed, for the matching number (the normalised one when neither matches).
  std::optional<double> difference;
  std::string reason;  // for kUncheckable and kNeither
};

// One claim with what we computed for it, as the reports show it.
struct AuditedClaim {
  ClaimAudit audit;
  ComputedScore computed;
};

ClaimAudit AuditClaim(const Claim& claim, const ComputedScore& computed,
                      double tolerance = kClaimToleranceMinutes);

// Rows of a CSV with a header naming at least version, submitter, system,
// benchmark and minutes (the layout of official_time_to_train.csv). Quoted
// fields may hold commas and doubled quotes.
absl::StatusOr<std::vector<Claim>> ParseClaimsCsv(std::string_view text, const std::string& path);

}  // namespace mlperf::package
