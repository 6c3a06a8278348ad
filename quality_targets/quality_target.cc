#include "quality_targets/quality_target.h"

#include <algorithm>
#include <cstdlib>
#include <optional>

#include "fmt/format.h"
#include "quality_targets/benchmark_meta.h"
#include "quality_targets/embedded_rules.h"

namespace mlperf::quality {
namespace {

// `text` cut at every `separator` (std::string_view throughout: Abseil's
// own string_view may differ in a distribution's build).
std::vector<std::string_view> Split(std::string_view text, std::string_view separator) {
  std::vector<std::string_view> parts;
  for (size_t at = 0;;) {
    const size_t next = text.find(separator, at);
    parts.push_back(text.substr(at, next == std::string_view::npos ? next : next - at));
    if (next == std::string_view::npos) return parts;
    at = next + separator.size();
  }
}

bool ConsumePrefix(std::string_view* s, std::string_view prefix) {
  if (!s->starts_with(prefix)) return false;
  s->remove_prefix(prefix.size());
  return true;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::optional<std::string_view> RuleFile(const std::string& ruleset, const std::string& benchmark) {
  const std::string path = fmt::format("training/{}/closed_{}.rules", ruleset, benchmark);
  for (const EmbeddedFile& f : EmbeddedRuleFiles())
    if (path == f.path) return f.text;
  return std::nullopt;
}

// The expression of the `target` line in the `key eval_accuracy` record.
std::optional<std::string_view> TargetLine(std::string_view text) {
  bool in_record = false;
  for (std::string_view line : Split(text, "\n")) {
    const std::string_view t = Trim(line.substr(0, line.find('#')));
    if (t.starts_with("key ")) {
      const std::string_view name = Trim(t.substr(4));
      in_record = name.substr(0, name.find(' ')) == "eval_accuracy";
    } else if (in_record && t.starts_with("target ")) {
      return Trim(t.substr(7));
    }
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<QualityTarget> QualityTarget::Parse(std::string_view expression) {
  QualityTarget target;
  target.expression_ = std::string(Trim(expression));
  const auto error = [&] {
    return absl::InvalidArgumentError(
        fmt::format("target '{}': expected bounds on the metric such as 'v >= 0.759 and v < 1.0'",
                    target.expression_));
  };
  for (std::string_view clause : Split(target.expression_, " and ")) {
    clause = Trim(clause);
    if (clause.starts_with('(') && clause.ends_with(')'))
      clause = Trim(clause.substr(1, clause.size() - 2));
    if (!ConsumePrefix(&clause, "v")) return error();
    clause = Trim(clause);
    Op op;
    if (ConsumePrefix(&clause, ">=")) {
      op = Op::kGe;
    } else if (ConsumePrefix(&clause, "<=")) {
      op = Op::kLe;
    } else if (ConsumePrefix(&clause, ">")) {
      op = Op::kGt;
    } else if (ConsumePrefix(&clause, "<")) {
      op = Op::kLt;
    } else {
      return error();
    }
    const std::string number(Trim(clause));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (number.empty() || end != number.c_str() + number.size()) return error();
    target.bounds_.push_back({op, value});
  }
  if (target.bounds_.empty()) return error();
  return target;
}

Direction QualityTarget::direction() const {
  const Op op = bounds_.empty() ? Op::kGe : bounds_.front().op;
  return op == Op::kGe || op == Op::kGt ? Direction::kHigherIsBetter : Direction::kLowerIsBetter;
}

bool QualityTarget::Reached(double metric) const {
  return !bounds_.empty() && std::all_of(bounds_.begin(), bounds_.end(), [&](const Bound& b) {
    switch (b.op) {
      case Op::kGe:
        return metric >= b.value;
      case Op::kGt:
        return metric > b.value;
      case Op::kLe:
        return metric <= b.value;
      case Op::kLt:
        return metric < b.value;
    }
    return false;
  });
}

std::string QualityTarget::Describe() const {
  return higher_is_better() ? fmt::format("{:g}", value()) : fmt::format("<= {:g}", value());
}

absl::StatusOr<QualityTarget> ReadQualityTarget(const std::string& ruleset,
                                                const std::string& benchmark) {
  const std::optional<std::string_view> text = RuleFile(ruleset, benchmark);
  if (!text.has_value()) {
    return absl::NotFoundError(
        fmt::format("training ruleset {} has no closed rules for {}", ruleset, benchmark));
  }
  const std::optional<std::string_view> line = TargetLine(*text);
  if (!line.has_value()) {
    return absl::NotFoundError(fmt::format(
        "training/{}/closed_{}.rules states no eval_accuracy target", ruleset, benchmark));
  }
  return QualityTarget::Parse(*line);
}

bool RulesetAccepts(const std::string& ruleset, const std::string& benchmark) {
  const std::vector<std::string> allowed = meta::AllowedBenchmarks(ruleset);
  return std::find(allowed.begin(), allowed.end(), benchmark) != allowed.end() &&
         RuleFile(ruleset, benchmark).has_value();
}

absl::StatusOr<std::string> NewestRulesetFor(const std::string& benchmark) {
  std::optional<std::string> newest;
  for (const EmbeddedFile& f : EmbeddedRuleFiles()) {
    // training/<ruleset>/common.rules marks a ruleset.
    const std::vector<std::string_view> parts = Split(f.path, "/");
    if (parts.size() != 3 || parts[0] != "training" || parts[2] != "common.rules") continue;
    const std::string ruleset(parts[1]);
    if (!RulesetAccepts(ruleset, benchmark)) continue;
    if (!newest.has_value() || meta::RulesetAtLeast(ruleset, *newest)) newest = ruleset;
  }
  if (!newest.has_value())
    return absl::NotFoundError(fmt::format("no training ruleset accepts {}", benchmark));
  return *newest;
}

}  // namespace mlperf::quality
