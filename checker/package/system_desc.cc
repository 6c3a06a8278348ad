#include "checker/package/system_desc.h"

#include <algorithm>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"

namespace mlperf::package {

const std::vector<std::string>& RequiredSystemDescFields() {
  return meta::SystemDescription().required_fields;
}

namespace {

// A count the summary table multiplies (nodes x per-node counts): a whole
// number from 0 to 999,999,999, or text holding one, so the product fits.
bool IsCount(const json::Value& v) {
  if (v.is_int()) return v.as_int() >= 0 && v.as_int() < 1'000'000'000 && !v.is_big_int();
  if (!v.is_string() || v.as_string().empty() || v.as_string().size() > 9) return false;
  return std::all_of(v.as_string().begin(), v.as_string().end(),
                     [](char ch) { return ch >= '0' && ch <= '9'; });
}

std::vector<std::string> TypeProblems(const json::Value& desc,
                                      const std::vector<std::string>& fields) {
  if (!desc.is_object()) return {"the system description is not a JSON object"};
  std::vector<std::string> out;
  for (const std::string& f : fields) {
    const json::Value* v = desc.Find(f);
    if (!v) continue;
    if (f == "number_of_nodes" || f == "host_processors_per_node" || f == "accelerators_per_node") {
      if (!IsCount(*v)) {
        out.push_back(
            fmt::format("{} is {}, not a whole number below 10^9: the summary cannot count with it",
                        f, json::Dump(*v).substr(0, 200)));
      }
    } else if (!v->is_string() && !(f == "other_software_stack" && v->is_object())) {
      out.push_back(fmt::format("{} is {}, not text", f, json::Dump(*v).substr(0, 200)));
    }
  }
  return out;
}

// Wrong types fail the description: the official checker only looks for
// the fields, and a count it cannot multiply or a division that is neither
// closed nor open would silently change the score or skip the RCP check.
void AddTypeProblems(const json::Value& desc, const std::vector<std::string>& fields,
                     SystemDescCheck& c) {
  std::vector<std::string> problems = TypeProblems(desc, fields);
  const json::Value* division = desc.is_object() ? desc.Find("division") : nullptr;
  if (division != nullptr && division->is_string() && division->as_string() != "closed" &&
      division->as_string() != "open") {
    problems.push_back(fmt::format("division is {}, neither closed nor open",
                                   json::Dump(*division).substr(0, 200)));
  }
  for (std::string& p : problems) {
    c.valid = false;
    c.reasons.push_back(std::move(p));
  }
}

}  // namespace

SystemDescCheck CheckSystemDesc(const json::Value& desc, const std::string& ruleset) {
  const meta::SystemDescriptionRules& rules = meta::SystemDescription();
  SystemDescCheck c;
  for (const std::string& f : rules.required_fields) {
    if (desc.Find(f) == nullptr) {
      c.valid = false;
      c.reasons.push_back(fmt::format("Missing field {}", f));
    }
  }
  if (!meta::RulesetAtLeast(ruleset, rules.status_checked_from)) {
    AddTypeProblems(desc, rules.required_fields, c);
    return c;
  }
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
  AddTypeProblems(desc, rules.required_fields, c);
  return c;
}

}  // namespace mlperf::package
