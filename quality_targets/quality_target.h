// A closed benchmark's quality target as the rules state it: the `target`
// line of `key eval_accuracy` in training/<ruleset>/closed_<benchmark>.rules,
// a conjunction of bounds on the metric (`v >= 0.759 and v < 1.0`, `v <= 3.3
// and v > 0.0`). The first bound is the target and says which way is better;
// a run reaches it when every bound holds, as the checker decides. Also the
// ruleset a benchmark follows by default: the newest whose round accepts it.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace mlperf::quality {

enum class Direction { kHigherIsBetter, kLowerIsBetter };

class QualityTarget {
 public:
  enum class Op { kGe, kGt, kLe, kLt };
  struct Bound {
    Op op;
    double value;
  };

  // Clauses `v OP NUMBER` (OP one of >= > <= <) joined by `and`, each
  // possibly in parentheses; anything else (a metric with fields, a state
  // variable) is an error naming the expression.
  static absl::StatusOr<QualityTarget> Parse(std::string_view expression);

  // A default-constructed target has no bounds and is never reached.
  double value() const { return bounds_.empty() ? 0.0 : bounds_.front().value; }
  Direction direction() const;
  bool higher_is_better() const { return direction() == Direction::kHigherIsBetter; }
  // Whether `metric` meets every bound.
  bool Reached(double metric) const;
  // "0.759" for a higher-is-better target, "<= 3.3" for a lower one.
  std::string Describe() const;
  const std::string& expression() const { return expression_; }

 private:
  std::vector<Bound> bounds_;
  std::string expression_;
};

// The target of `benchmark` under training ruleset `ruleset`; NotFound when
// the ruleset has no closed rules file for it.
absl::StatusOr<QualityTarget> ReadQualityTarget(const std::string& ruleset,
                                                const std::string& benchmark);

// The newest training ruleset whose round accepts `benchmark`
// (benchmarks.json) and that has its closed rules file; NotFound when none.
absl::StatusOr<std::string> NewestRulesetFor(const std::string& benchmark);

// Whether `ruleset`'s round accepts `benchmark` and has its closed rules file.
bool RulesetAccepts(const std::string& ruleset, const std::string& benchmark);

}  // namespace mlperf::quality
