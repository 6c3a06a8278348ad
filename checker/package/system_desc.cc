#include "checker/package/system_desc.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {

const std::vector<std::string>& RequiredSystemDescFields() {
  return meta::SystemDescription().required_fields;
}

SystemDescCheck CheckSystemDesc(const json::Value& desc, const std::string& ruleset) {
  const meta::SystemDescriptionRules& rules = meta::SystemDescription();
  SystemDescCheck c;
  for (const std::string& f : rules.required_fields) {
    if (desc.Find(f) == nullptr) {
      c.valid = false;
      c.reasons.push_back(fmt::format("Missing field {}", f));
    }
  }
  if (!meta::RulesetAtLeast(ruleset, rules.status_checked_from)) return c;
  if (const json::Value* status = desc.Find("status")) {
    const std::vector<std::string>& allowed = rules.status_values;
    if (!status->is_string() ||
        std::find(allowed.begin(), allowed.end(), status->as_string()) == allowed.end()) {
      c.valid = false;
      const std::string shown = status->is_string() ? status->as_string() : json::Dump(*status);
      c.reasons = {fmt::format("Field status contains a non valid value: {}, must be one of [{}]",
                               shown, absl::StrJoin(allowed, ", "))};
    }
  }
  return c;
}

}  // namespace mlperf::package
