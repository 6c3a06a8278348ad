// The system description checker (spec 7.5, system_desc_checker): the fields
// every systems/<system>.json must have and, from the ruleset the metadata
// names (4.0.0), the allowed values of "status" (quality_targets/benchmarks.json).
#pragma once

#include <string>
#include <vector>

#include "base/json.h"

namespace mlperf::package {

struct SystemDescCheck {
  bool valid = true;
  // Official reasons: "Missing field <f>", or only the status reason when
  // the status value is not allowed (it replaces the others); then ours:
  // values of a type the summarizer cannot use (a node count that is no
  // whole number, a list where text belongs, a division neither closed nor
  // open), which the official checker lets pass.
  std::vector<std::string> reasons;
};

// `desc` is the parsed JSON document (any value; a non-object misses every
// field). `ruleset` is the training ruleset, e.g. "4.0.0".
SystemDescCheck CheckSystemDesc(const json::Value& desc, const std::string& ruleset);

// The fields, in the official order.
const std::vector<std::string>& RequiredSystemDescFields();

}  // namespace mlperf::package
