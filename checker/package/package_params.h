// package_checker_params files: per-system and per-benchmark bypass requests
// that the official package checker reads (spec 7.2), and the organisation-
// level file that only the official wrapper scripts read (spec 1, 7.1).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace mlperf::package {

struct PackageParams {
  bool rcp_bypass = false;
  bool seed_checker_bypass = false;
  // Lines that name a bypass but that the official reader does not match
  // (it compares each line with its newline still attached, so only a last
  // line without a final newline counts), e.g. "rcp-bypass\n".
  std::vector<std::string> ignored_requests;
};

// The package checker's reading of results/<system>[/<benchmark>]/
// package_checker_params: a line equal to "rcp-bypass" or
// "seed-checker-bypass" exactly, newline included in the comparison.
PackageParams ParsePackageParams(std::string_view text);

// The wrapper scripts turn each line L of <org>/package_checker_params into
// the flag --L; we read the request with either spelling ("rcp_bypass" is the
// 3.0-era flag name, "rcp-bypass" the current one).
struct OrgParamsRequest {
  bool rcp_bypass = false;
  bool seed_checker_bypass = false;
  std::vector<std::string> other_lines;  // anything else, trimmed
};
OrgParamsRequest ParseOrgParams(std::string_view text);

}  // namespace mlperf::package
