// The in-memory form of one rule file (docs/RULES_FORMAT.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "checker/expr.h"

namespace mlperf::checker {

enum class Requirement { kNone, kOptional, kExactlyOne, kAtLeastOne, kAtLeast, kOneOf };

// An expression together with where it was written, for messages.
struct RuleExpr {
  Expr expr;
  int source_line = 0;  // 1-based line in the rule file
};

struct Action {
  enum class Kind { kSet, kAdd, kChain };
  Kind kind = Kind::kSet;
  std::string state_name;  // kSet / kAdd
  RuleExpr value;          // kSet / kAdd
  std::optional<RuleExpr> when;
  std::string chain_template;  // kChain: rule file name, "{v}" replaced by str(v)
  int source_line = 0;
  std::string text;  // the action as written
};

struct KeyRecord {
  std::string name;
  Requirement requirement = Requirement::kNone;
  int at_least = 0;                       // kAtLeast
  std::vector<std::string> alternatives;  // kOneOf, without `name` itself
  std::vector<RuleExpr> checks;
  std::vector<Action> actions;
  std::optional<RuleExpr> first_check;
  std::optional<RuleExpr> target;
  int source_line = 0;
};

struct StateInit {
  std::string name;
  RuleExpr value;
};

// The stable_diffusion kind: one synthetic line per evaluation point.
struct GroupMetrics {
  std::string source_key;
  std::string field;
  std::string into_key;
  int source_line = 0;
};

struct RuleFile {
  std::string id;  // "<ruleset>/<name>", e.g. "3.0.0/closed_resnet"
  std::string ruleset;
  std::vector<StateInit> state;
  std::optional<GroupMetrics> group_metrics;
  std::vector<KeyRecord>
      records;  // in order; a later record for the same name replaced the earlier
  std::vector<RuleExpr> end_checks;

  const KeyRecord* Find(const std::string& key) const;
};

}  // namespace mlperf::checker
