#include "checker/package/claims_audit.h"

#include <cmath>
#include <cstdlib>
#include <map>

#include "fmt/format.h"

namespace mlperf::package {
namespace {

// One CSV record's fields (RFC 4180 quoting, no newlines inside fields).
std::vector<std::string> SplitCsvLine(std::string_view line) {
  std::vector<std::string> fields(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        fields.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else if (c != '\r') {
      fields.back() += c;
    }
  }
  return fields;
}

}  // namespace

std::string_view ClaimMatchName(ClaimMatch m) {
  switch (m) {
    case ClaimMatch::kNormalized:
      return "normalized";
    case ClaimMatch::kRaw:
      return "raw";
    case ClaimMatch::kNeither:
      return "neither";
    case ClaimMatch::kUncheckable:
      return "uncheckable";
  }
  return "uncheckable";
}

ClaimAudit AuditClaim(const Claim& claim, const ComputedScore& computed, double tolerance) {
  ClaimAudit a{.claim = claim};
  if (!std::isfinite(claim.minutes)) {
    a.reason = "the claim has no finite number of minutes";
    return a;
  }
  if (!computed.normalized && !computed.olympic_mean) {
    a.reason = computed.unavailable.empty() ? "no score computed" : computed.unavailable;
    return a;
  }
  if (computed.normalized && std::fabs(claim.minutes - *computed.normalized) <= tolerance) {
    a.match = ClaimMatch::kNormalized;
    a.difference = claim.minutes - *computed.normalized;
  } else if (computed.olympic_mean &&
             std::fabs(claim.minutes - *computed.olympic_mean) <= tolerance) {
    a.match = ClaimMatch::kRaw;
    a.difference = claim.minutes - *computed.olympic_mean;
  } else {
    a.match = ClaimMatch::kNeither;
    const double reference = computed.normalized ? *computed.normalized : *computed.olympic_mean;
    a.difference = claim.minutes - reference;
    a.reason = fmt::format("differs by {:.6f} min from the computed score", *a.difference);
  }
  return a;
}

absl::StatusOr<std::vector<Claim>> ParseClaimsCsv(std::string_view text, const std::string& path) {
  std::vector<Claim> claims;
  std::map<std::string, size_t> column;
  size_t line_no = 0;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    const std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    ++line_no;
    if (line.empty() || line == "\r") continue;
    const std::vector<std::string> fields = SplitCsvLine(line);
    if (column.empty()) {
      for (size_t i = 0; i < fields.size(); ++i) column[fields[i]] = i;
      for (const char* need : {"version", "submitter", "system", "benchmark", "minutes"}) {
        if (!column.contains(need)) {
          return absl::InvalidArgumentError(
              fmt::format("{}:{}: header lacks column '{}'", path, line_no, need));
        }
      }
      continue;
    }
    auto field = [&](const char* name) -> const std::string* {
      const size_t i = column.at(name);
      return i < fields.size() ? &fields[i] : nullptr;
    };
    const std::string* minutes = field("minutes");
    if (!field("version") || !field("submitter") || !field("system") || !field("benchmark") ||
        !minutes) {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: expected {} fields", path, line_no, column.size()));
    }
    char* end = nullptr;
    const double value = std::strtod(minutes->c_str(), &end);
    if (minutes->empty() || *end != '\0') {
      return absl::InvalidArgumentError(
          fmt::format("{}:{}: minutes '{}' is not a number", path, line_no, *minutes));
    }
    Claim claim{.version = *field("version"),
                .submitter = *field("submitter"),
                .system = *field("system"),
                .benchmark = *field("benchmark"),
                .minutes = value};
    for (const auto& [name, i] : column) {
      if (name == "version" || name == "submitter" || name == "system" || name == "benchmark" ||
          name == "minutes") {
        continue;
      }
      claim.other_columns.emplace_back(name, i < fields.size() ? fields[i] : "");
    }
    claims.push_back(std::move(claim));
  }
  return claims;
}

}  // namespace mlperf::package
