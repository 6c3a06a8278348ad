// compliance_check --html: one self-contained HTML page for reviewers (no
// scripts, fonts or network; it reads the same with JavaScript off). The
// verdicts per organisation, system and benchmark come first; then each
// benchmark directory: its runs, scores, RCP comparison, convergence curves
// against the target and the RCP band (inline SVG), every finding with the
// quoted log line, reviewer notes, and the claims audit when one was asked.
//
// Numbers a program may want to read back carry data-* attributes: each
// verdict cell data-verdict, each score data-score (Python's float repr, as
// --json prints it).
#pragma once

#include <string>
#include <vector>

#include "checker/package/claims_audit.h"
#include "checker/package/package_check.h"
#include "checker/report.h"

namespace mlperf::package {

struct HtmlReportInput {
  std::vector<std::string> inputs;               // the paths given, for the header
  std::vector<checker::LogReport> logs;          // plain log files given beside packages
  const std::vector<OrgReport>* orgs = nullptr;  // checked with report_details
  std::vector<AuditedClaim> claims;
  bool claims_given = false;  // --claims: the table appears even when empty
  bool all_pass = false;
};

std::string HtmlReport(const HtmlReportInput& input);

}  // namespace mlperf::package
