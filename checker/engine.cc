#include "checker/engine.h"

#include <cmath>
#include <cstdio>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "checker/expr.h"
#include "checker/message_store.h"
#include "checker/py_ops.h"

namespace mlperf::checker {
namespace {

using json::Value;
using mllog::LogLine;

// Values shown in messages are cut here so that one huge value cannot flood the output.
constexpr size_t kMaxShown = 200;

std::string Shown(const Value& v) {
  std::string s = json::Dump(v);
  if (s.size() > kMaxShown) s = absl::StrCat(s.substr(0, kMaxShown), "...");
  return s;
}

// A logged text cut the same way.
std::string Cut(const std::string& s) {
  return s.size() > kMaxShown ? absl::StrCat(s.substr(0, kMaxShown), "...") : s;
}

std::string RuleRef(const RuleFile& file, int line) {
  return absl::StrCat(file.id, ".rules:", line);
}

// The official tool runs checks and actions only on the first occurrence of
// keys whose name contains "submission_".
bool RunsOnce(const std::string& key) { return absl::StrContains(key, "submission_"); }

// A Python dict key for grouping: equal keys for values Python hashes and
// compares equal (1, 1.0 and True); NaNs never match each other.
std::string GroupKey(const Value& v) {
  switch (v.type()) {
    case json::Type::kNull:
      return "none";
    case json::Type::kBool:
      return v.as_bool() ? "n:1" : "n:0";
    case json::Type::kInt:
      return v.is_big_int() ? absl::StrCat("n:", v.as_string()) : absl::StrCat("n:", v.as_int());
    case json::Type::kFloat: {
      const double d = v.as_float();
      if (d != d) return "nan";  // json's NaN is one shared object: one dict key
      if (std::isfinite(d) && d == std::floor(d)) {
        char digits[400];
        std::snprintf(digits, sizeof digits, "%.0f", d);
        return absl::StrCat("n:", d == 0 ? "0" : digits);
      }
      return absl::StrCat("f:", json::PythonFloatRepr(d));
    }
    case json::Type::kString:
      return absl::StrCat("s:", v.as_string());
    default:
      return "";
  }
}

class LogChecker {
 public:
  LogChecker(const mllog::ParsedLog& log, const RuleLibrary& rules, const CheckOptions& options)
      : log_(log), rules_(rules), options_(options) {
    lines_.reserve(log.lines.size());
    for (const LogLine& line : log.lines) lines_.push_back(&line);
  }

  LogReport Run(const std::string& ruleset) {
    LogReport report;
    report.path = log_.path;
    report.ruleset = ruleset;
    FindIdentity(report);
    if (ParseDiagnostics()) {
      if (lines_.empty() && !crashed_) {
        store_.PutUnkeyed(
            {.message =
                 "no :::MLLOG lines detected; the log is empty or not an MLPerf result log"});
      }
      struct Pending {
        std::string id;
        const LogLine* origin;
        const RuleFile* from;
        std::vector<std::string> chain;  // the files that led here, for loops
      };
      std::deque<Pending> queue{{ruleset + "/common", nullptr, nullptr, {}}};
      while (!queue.empty() && !crashed_) {
        Pending next = queue.front();
        queue.pop_front();
        const RuleFile* file = rules_.Find(next.id);
        if (file == nullptr) {
          MissingRuleFile(next.id, next.origin, next.from);
          break;
        }
        if (std::find(next.chain.begin(), next.chain.end(), next.id) != next.chain.end()) {
          // A loop would run for ever (the official checker recurses until it crashes).
          store_.PutUnkeyed(
              {.message = absl::StrCat("rule file ", next.id, " chains back to itself through ",
                                       absl::StrJoin(next.chain, " -> "))});
          crashed_ = true;
          break;
        }
        next.chain.push_back(next.id);
        std::vector<std::string> chained;
        RunFile(*file, &chained);
        for (auto& [id, origin] : chained_) queue.push_back({id, origin, file, next.chain});
        chained_.clear();
      }
    }
    report.errors = store_.Errors();
    report.warnings = store_.Warnings();
    return report;
  }

 private:
  void FindIdentity(LogReport& report) const {
    for (const LogLine& line : log_.lines) {
      if (!line.key_is_string || !line.value.is_string()) continue;
      if (line.key == "submission_benchmark" && !report.benchmark)
        report.benchmark = Cut(line.value.as_string());
      if (line.key == "submission_division" && !report.division)
        report.division = Cut(line.value.as_string());
    }
  }

  Finding AtLine(const LogLine& line, std::string rule, std::string message) const {
    return Finding{.key = line.key_is_string ? line.key : "",
                   .line = line.index,
                   .file_line = line.file_line,
                   .rule = std::move(rule),
                   .message = std::move(message),
                   .quote = line.text};
  }

  // Parser diagnostics; returns false when the official tool would crash before checking.
  bool ParseDiagnostics() {
    bool skipped = false;
    for (const mllog::Diagnostic& d : log_.diagnostics) {
      Finding f{.line = d.index, .file_line = d.file_line, .rule = "log parser"};
      switch (d.outcome) {
        case mllog::OfficialOutcome::kKept:
          f.message = absl::StrCat("note: ", d.reason);
          store_.PutNote(std::move(f));
          break;
        case mllog::OfficialOutcome::kSkipped:
          f.message =
              absl::StrCat("line cannot be parsed and is skipped, which fails the log: ", d.reason);
          store_.PutUnkeyed(std::move(f));
          skipped = true;
          break;
        case mllog::OfficialOutcome::kCrash:
          f.message = absl::StrCat(d.reason, " (the official checker stops with a traceback here)");
          store_.PutUnkeyed(std::move(f));
          crashed_ = true;
          break;
      }
    }
    (void)skipped;
    return !crashed_;
  }

  void MissingRuleFile(const std::string& id, const LogLine* origin, const RuleFile* from) {
    const std::string ruleset = id.substr(0, id.find('/'));
    std::string message = absl::StrCat("no rule file ", Cut(id), " in ruleset ", ruleset);
    if (origin != nullptr) {
      absl::StrAppend(&message, ": '", origin->key, "' = ", Shown(origin->value),
                      " selects rules that do not exist");
    }
    const std::string name = id.substr(id.find('/') + 1);
    std::vector<std::string> elsewhere;
    for (const std::string& r : rules_.Rulesets()) {
      if (rules_.Find(absl::StrCat(r, "/", name)) != nullptr) elsewhere.push_back(r);
    }
    if (!elsewhere.empty())
      absl::StrAppend(&message, "; rulesets with ", name, ": ", absl::StrJoin(elsewhere, ", "));
    absl::StrAppend(&message, " (the official checker crashes here)");
    Finding f = origin != nullptr
                    ? AtLine(*origin, from != nullptr ? from->id + ".rules" : "", message)
                    : Finding{.message = message};
    store_.PutUnkeyed(std::move(f));
    crashed_ = true;
  }

  // "found v = ..., s.x = ..." for a message.
  std::string Found(const RuleExpr& e, const EvalContext& ctx) const {
    std::vector<std::string> parts;
    if (ctx.line_value != nullptr) parts.push_back(absl::StrCat("v = ", Shown(*ctx.line_value)));
    for (const std::string& name : e.expr.state_reads()) {
      const Value* x = state_.Find(name);
      parts.push_back(absl::StrCat("s.", name, " = ", x != nullptr ? Shown(*x) : "<unset>"));
    }
    if (parts.empty()) return "";
    return absl::StrCat("; found ", absl::StrJoin(parts, ", "));
  }

  EvalContext LineContext(const LogLine& line) const {
    return EvalContext{&line.value, &line.metadata, line.time_ms, &state_};
  }

  void RunCheck(const RuleFile& file, const LogLine& line, const RuleExpr& check,
                const char* what) {
    const EvalContext ctx = LineContext(line);
    absl::StatusOr<Value> result = Evaluate(check.expr, ctx);
    if (result.ok() && py::Truthy(*result)) return;
    std::string message =
        result.ok()
            ? absl::StrCat(what, " failed: expected `", check.expr.text(), "`", Found(check, ctx))
            : absl::StrCat(what, " could not be evaluated: `", check.expr.text(), "` raised ",
                           result.status().message(), Found(check, ctx));
    store_.PutKeyed(line.key, AtLine(line, RuleRef(file, check.source_line), std::move(message)));
  }

  void RunActions(const RuleFile& file, const LogLine& line, const KeyRecord& record) {
    const EvalContext ctx = LineContext(line);
    for (const Action& a : record.actions) {
      absl::Status status = RunAction(file, line, a, ctx);
      if (!status.ok()) {
        // Like an exception in official POST code: the rest of the block does not run.
        store_.PutKeyed(
            line.key, AtLine(line, RuleRef(file, a.source_line),
                             absl::StrCat("action `", a.text, "` failed: ", status.message(),
                                          ctx.line_value
                                              ? absl::StrCat("; found v = ", Shown(*ctx.line_value))
                                              : "")));
        return;
      }
    }
  }

  absl::Status RunAction(const RuleFile& file, const LogLine& line, const Action& a,
                         const EvalContext& ctx) {
    if (a.when.has_value()) {
      absl::StatusOr<Value> cond = Evaluate(a.when->expr, ctx);
      if (!cond.ok()) return cond.status();
      if (!py::Truthy(*cond)) return absl::OkStatus();
    }
    if (a.kind == Action::Kind::kChain) {
      std::string target = a.chain_template;
      std::string ruleset = file.ruleset;
      if (size_t slash = target.find('/'); slash != std::string::npos) {
        ruleset = target.substr(0, slash);
        target = target.substr(slash + 1);
      }
      const std::string value = py::Str(line.value);
      // A value with a path separator cannot name a rule file of ours.
      target = absl::StrReplaceAll(
          target, {{"{v}", value.find('/') == std::string::npos ? value : "\x01"}});
      chained_.emplace_back(absl::StrCat(ruleset, "/", target), &line);
      return absl::OkStatus();
    }
    absl::StatusOr<Value> value = Evaluate(a.value.expr, ctx);
    if (!value.ok()) return value.status();
    if (a.kind == Action::Kind::kAdd) {
      const Value* current = state_.Find(a.state_name);
      if (current == nullptr)
        return absl::NotFoundError(absl::StrCat("KeyError: '", a.state_name, "'"));
      absl::StatusOr<Value> sum = py::Binary(py::BinaryOp::kAdd, *current, *value);
      if (!sum.ok()) return sum.status();
      value = std::move(sum);
    }
    state_.Set(a.state_name, *std::move(value));
    return absl::OkStatus();
  }

  // The stable_diffusion kind (see docs/RULES_FORMAT.md, group_metrics).
  void GroupMetricLines(const RuleFile& file, const GroupMetrics& g) {
    struct Group {
      std::string key;
      LogLine line;
    };
    std::vector<Group> groups;
    std::unordered_map<std::string, size_t> by_key;
    const Value metric_name("metric");
    const size_t n = lines_.size();
    for (size_t i = 0; i < n && !crashed_; ++i) {
      const LogLine& line = *lines_[i];
      if (!line.key_is_string || line.key != g.source_key) continue;
      auto fail = [&](absl::string_view why) {
        store_.PutUnkeyed(AtLine(line, RuleRef(file, g.source_line),
                                 absl::StrCat("cannot group evaluation results: ", why,
                                              " (the official checker crashes here)")));
        crashed_ = true;
      };
      absl::StatusOr<bool> has_metric = py::Compare(py::CompareOp::kIn, metric_name, line.metadata);
      if (!has_metric.ok()) return fail(has_metric.status().message());
      if (!*has_metric) continue;
      absl::StatusOr<Value> point = py::Subscript(line.metadata, Value(g.field));
      if (!point.ok())
        return fail(absl::StrCat("metadata ", g.field, ": ", point.status().message()));
      absl::StatusOr<Value> metric = py::Subscript(line.metadata, metric_name);
      if (!metric.ok()) return fail(metric.status().message());
      if (point->is_array() || point->is_object() || metric->is_array() || metric->is_object()) {
        return fail("unhashable metadata value");
      }
      const std::string key = GroupKey(*point);
      auto [it, inserted] = by_key.emplace(key, groups.size());
      if (inserted) {
        Group grp{key, line};
        grp.line.key = g.into_key;
        grp.line.key_is_string = true;
        grp.line.text = "";
        grp.line.index = -1;
        grp.line.file_line = 0;
        grp.line.value = Value(json::Object{{g.field, *point}});
        grp.line.metadata = Value(json::Object{});
        groups.push_back(std::move(grp));
      }
      LogLine& agg = groups[it->second].line;
      agg.time_ms = agg.time_ms > line.time_ms ? agg.time_ms : line.time_ms;
      // JSON keys are strings; a non-string metric cannot match any name a rule reads.
      agg.value.Set(metric->is_string() ? metric->as_string() : "\x01" + py::Repr(*metric),
                    line.value);
    }
    for (Group& grp : groups) {
      synthetic_.push_back(std::move(grp.line));
      lines_.push_back(&synthetic_.back());
    }
  }

  void RunFile(const RuleFile& file, std::vector<std::string>*) {
    state_ = Value(json::Object{});
    for (const StateInit& init : file.state) {
      absl::StatusOr<Value> value = Evaluate(init.value.expr, EvalContext{.state = &state_});
      if (!value.ok()) {
        store_.PutUnkeyed(
            {.rule = RuleRef(file, init.value.source_line),
             .message = absl::StrCat("state initialiser failed: ", value.status().message())});
        crashed_ = true;
        return;
      }
      state_.Set(init.name, *std::move(value));
    }
    if (file.group_metrics) GroupMetricLines(file, *file.group_metrics);
    if (crashed_) return;

    const size_t n_records = file.records.size();
    std::unordered_map<std::string_view, size_t> index;
    for (size_t i = 0; i < n_records; ++i) {
      index.emplace(file.records[i].name, i);
      store_.DropKeyed(file.records[i].name);
    }
    std::vector<std::vector<const Value*>> reported(n_records);
    std::vector<const LogLine*> first_line(n_records, nullptr);
    std::vector<bool> executed_once(n_records, false), first_seen(n_records, false);
    std::vector<int64_t> target_hits(n_records, -1);  // -1: no line of the key evaluated yet
    std::vector<size_t> target_order;  // records in order of their first target evaluation
    std::vector<const LogLine*> last_target_line(n_records, nullptr);

    for (const LogLine* line_ptr : lines_) {
      const LogLine& line = *line_ptr;
      if (!line.key_is_string) continue;
      auto it = index.find(line.key);
      if (it == index.end()) continue;
      const size_t ri = it->second;
      const KeyRecord& record = file.records[ri];
      reported[ri].push_back(&line.value);
      if (first_line[ri] == nullptr) first_line[ri] = &line;
      if (!executed_once[ri]) {
        for (const RuleExpr& check : record.checks) RunCheck(file, line, check, "check");
        RunActions(file, line, record);
      }
      if (record.first_check && !first_seen[ri]) {
        first_seen[ri] = true;
        RunCheck(file, line, *record.first_check, "first-occurrence check");
      }
      if (record.target) {
        if (target_hits[ri] < 0) {
          target_hits[ri] = 0;
          target_order.push_back(ri);
        }
        absl::StatusOr<Value> met = Evaluate(record.target->expr, LineContext(line));
        if (!met.ok()) {
          store_.PutUnkeyed(AtLine(line, RuleRef(file, record.target->source_line),
                                   absl::StrCat("quality target `", record.target->expr.text(),
                                                "` cannot be evaluated: ", met.status().message(),
                                                Found(*record.target, LineContext(line)),
                                                " (the official checker crashes here)")));
          crashed_ = true;
          return;
        }
        if (py::Truthy(*met)) ++target_hits[ri];
        last_target_line[ri] = &line;
      }
      if (RunsOnce(line.key)) executed_once[ri] = true;
    }

    for (size_t ri : target_order) {
      if (target_hits[ri] > 0) continue;
      const KeyRecord& record = file.records[ri];
      const LogLine& last = *last_target_line[ri];
      Finding f =
          AtLine(last, RuleRef(file, record.target->source_line),
                 absl::StrCat("quality target not reached: no '", record.name, "' line satisfies `",
                              record.target->expr.text(), "` (", reported[ri].size(),
                              " checked; the last has v = ", Shown(last.value), ")"));
      store_.PutUnkeyed(std::move(f));
    }

    CheckRequirements(file, reported, first_line);

    for (const RuleExpr& check : file.end_checks) {
      absl::StatusOr<Value> result = Evaluate(check.expr, EvalContext{.state = &state_});
      if (result.ok() && py::Truthy(*result)) continue;
      store_.PutUnkeyed(
          {.rule = RuleRef(file, check.source_line),
           .message = result.ok()
                          ? absl::StrCat("end check failed: expected `", Shorten(check.expr.text()),
                                         "`", Found(check, EvalContext{.state = &state_}))
                          : absl::StrCat("end check could not be evaluated: ",
                                         result.status().message())});
    }
  }

  static std::string Shorten(const std::string& s) {
    return s.size() > kMaxShown ? absl::StrCat(s.substr(0, kMaxShown), "...") : s;
  }

  void CheckRequirements(const RuleFile& file,
                         const std::vector<std::vector<const Value*>>& reported,
                         const std::vector<const LogLine*>& first_line) {
    std::vector<std::vector<std::string>> groups;
    for (size_t ri = 0; ri < file.records.size(); ++ri) {
      const KeyRecord& r = file.records[ri];
      const std::vector<const Value*>& values = reported[ri];
      const size_t n = values.size();
      Finding f{.key = r.name, .rule = RuleRef(file, r.source_line)};
      switch (r.requirement) {
        case Requirement::kNone:
        case Requirement::kOptional:
          break;
        case Requirement::kExactlyOne: {
          if (n == 1) break;
          if (n == 0) {
            f.message = "expected exactly one line with this key, found none";
            store_.PutKeyed(r.name, std::move(f));
            break;
          }
          // Python's all_same: every value == the first.
          size_t differing = 0;
          for (size_t i = 1; i < n && differing == 0; ++i) {
            if (!py::SameOrEquals(*values[0], *values[i])) differing = i;
          }
          if (differing == 0) {
            f.message = absl::StrCat("expected exactly one line with this key, found ", n,
                                     " with the same value ", Shown(*values[0]));
            if (options_.werror) {
              store_.PutKeyed(r.name, std::move(f));
            } else {
              store_.PutWarning(r.name, std::move(f));
            }
            break;
          }
          std::vector<std::string> distinct;
          for (const Value* v : values) {
            std::string s = py::Str(*v);
            if (std::find(distinct.begin(), distinct.end(), s) == distinct.end())
              distinct.push_back(s);
          }
          f.message = absl::StrCat("expected exactly one line with this key, found ", n,
                                   " with different values: [",
                                   Shorten(absl::StrJoin(distinct, ", ")), "]");
          if (const LogLine* first = first_line[ri]) {
            f.line = first->index;
            f.file_line = first->file_line;
            f.quote = first->text;
          }
          store_.PutKeyed(r.name, std::move(f));
          break;
        }
        case Requirement::kAtLeastOne:
        case Requirement::kAtLeast: {
          const size_t want =
              r.requirement == Requirement::kAtLeastOne ? 1 : static_cast<size_t>(r.at_least);
          if (n >= want) break;
          f.message =
              want == 1
                  ? std::string("expected at least one line with this key, found none")
                  : absl::StrCat("expected at least ", want, " lines with this key, found ", n);
          store_.PutKeyed(r.name, std::move(f));
          break;
        }
        case Requirement::kOneOf: {
          std::vector<std::string> names = r.alternatives;
          names.push_back(r.name);
          std::sort(names.begin(), names.end());
          names.erase(std::unique(names.begin(), names.end()), names.end());
          if (std::find(groups.begin(), groups.end(), names) == groups.end())
            groups.push_back(names);
          break;
        }
      }
    }
    for (const std::vector<std::string>& names : groups) {
      bool any = false;
      for (const std::string& name : names) {
        // Validated when the file was read: every alternative has its own record.
        for (size_t ri = 0; ri < file.records.size(); ++ri) {
          if (file.records[ri].name == name && !reported[ri].empty()) any = true;
        }
      }
      if (any) continue;
      store_.PutUnkeyed(
          {.rule = file.id + ".rules",
           .message = absl::StrCat("expected at least one line with one of the keys '",
                                   absl::StrJoin(names, "', '"), "', found none")});
    }
  }

  const mllog::ParsedLog& log_;
  const RuleLibrary& rules_;
  const CheckOptions& options_;
  std::vector<const LogLine*> lines_;  // the log's lines, then synthetic ones
  std::deque<LogLine> synthetic_;      // stable addresses for lines_
  MessageStore store_;
  Value state_;
  std::vector<std::pair<std::string, const LogLine*>> chained_;
  bool crashed_ = false;
};

}  // namespace

LogReport CheckLog(const mllog::ParsedLog& log, const RuleLibrary& rules,
                   const std::string& ruleset, const CheckOptions& options) {
  return LogChecker(log, rules, options).Run(ruleset);
}

}  // namespace mlperf::checker
