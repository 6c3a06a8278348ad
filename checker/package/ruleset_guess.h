// A reviewer note when a package fits another ruleset better than the one it
// is checked under (mlcommons/logging #130, #382): its benchmark folders are
// all allowed by another round but not by this one, or logs that fail here
// comply there. One line naming the better ruleset and why; never a verdict.
#pragma once

#include <optional>
#include <string>

#include "checker/package/package_check.h"
#include "checker/rule_library.h"

namespace mlperf::package {

std::optional<std::string> RulesetGuessNote(const OrgReport& report,
                                            const checker::RuleLibrary& rules);

}  // namespace mlperf::package
