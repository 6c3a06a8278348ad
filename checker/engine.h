// Checks one parsed log against a ruleset, replicating the official
// compliance checker's rule chaining and verdict semantics
// (spec: shared/spec/mlperf_logging.md sections 4.2-4.6 and 11).
#pragma once

#include <string>

#include "checker/report.h"
#include "checker/rule_library.h"
#include "logging/mllog_parser.h"

namespace mlperf::checker {

struct CheckOptions {
  bool werror = false;  // warnings count as errors (official --werror)
};

// Never fails: every problem, including those on which the official tool
// crashes, becomes an error in the report.
LogReport CheckLog(const mllog::ParsedLog& log, const RuleLibrary& rules,
                   const std::string& ruleset, const CheckOptions& options = {});

}  // namespace mlperf::checker
