// Human and JSON renderings of check results.
#pragma once

#include <string>
#include <vector>

#include "checker/report.h"

namespace mlperf::checker {

// One verdict line per log, then one block per error and warning.
std::string FormatHuman(const LogReport& report);

// The documented JSON document (docs/compliance_check.md):
// {"tool", "ruleset", "verdict", "logs": [{"path", "ruleset", "benchmark",
// "division", "verdict", "errors": [...], "warnings": [...]}]}.
std::string FormatJson(const std::string& ruleset, const std::vector<LogReport>& reports);

}  // namespace mlperf::checker
