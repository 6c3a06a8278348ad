// Reads the text of one .rules file into a RuleFile.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "checker/rules.h"

namespace mlperf::checker {

// `id` is "<ruleset>/<name>"; errors read "<id>.rules:<line>: <what>".
absl::StatusOr<RuleFile> ReadRuleFile(absl::string_view text, const std::string& id);

}  // namespace mlperf::checker
