#include "checker/rule_reader.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace mlperf::checker {

const KeyRecord* RuleFile::Find(const std::string& key) const {
  for (const KeyRecord& r : records) {
    if (r.name == key) return &r;
  }
  return nullptr;
}

namespace {

struct LogicalLine {
  int number = 0;  // first physical line, 1-based
  std::string text;
};

bool IsIdentifier(absl::string_view s) {
  if (s.empty() || !(absl::ascii_isalpha(s[0]) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isalnum(c) || c == '_'; });
}

// Removes comments and joins lines while brackets are open (Python's implicit line joining).
absl::StatusOr<std::vector<LogicalLine>> SplitLines(absl::string_view text, const std::string& id) {
  std::vector<LogicalLine> out;
  LogicalLine current;
  int depth = 0;
  int number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++number;
    std::string line;
    char quote = 0;
    for (size_t i = 0; i < raw.size(); ++i) {
      char c = raw[i];
      if (quote != 0) {
        line += c;
        if (c == '\\' && i + 1 < raw.size()) {
          line += raw[++i];
        } else if (c == quote) {
          quote = 0;
        }
        continue;
      }
      if (c == '#') break;
      if (c == '\'' || c == '"') quote = c;
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      line += c;
    }
    if (quote != 0)
      return absl::InvalidArgumentError(
          absl::StrCat(id, ".rules:", number, ": unterminated string"));
    if (depth < 0)
      return absl::InvalidArgumentError(
          absl::StrCat(id, ".rules:", number, ": unbalanced ')' or ']'"));
    if (current.text.empty()) current.number = number;
    absl::string_view stripped = absl::StripAsciiWhitespace(line);
    if (!stripped.empty()) {
      if (!current.text.empty()) current.text += ' ';
      current.text.append(stripped.data(), stripped.size());
    }
    if (depth == 0 && !current.text.empty()) {
      out.push_back(std::move(current));
      current = {};
    }
  }
  if (depth != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(id, ".rules:", current.number, ": unclosed bracket"));
  }
  return out;
}

// Finds " when " outside string literals; npos if absent.
size_t FindWhen(absl::string_view s) {
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote != 0) {
      if (c == '\\')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if (c == '\'' || c == '"') {
      quote = c;
      continue;
    }
    if (s.substr(i, 6) == " when ") return i;
  }
  return absl::string_view::npos;
}

class Reader {
 public:
  explicit Reader(std::string id) : id_(std::move(id)) {
    file_.id = id_;
    file_.ruleset = id_.substr(0, id_.find('/'));
  }

  absl::StatusOr<RuleFile> Read(absl::string_view text) {
    absl::StatusOr<std::vector<LogicalLine>> lines = SplitLines(text, id_);
    if (!lines.ok()) return lines.status();
    for (const LogicalLine& line : *lines) {
      line_ = line.number;
      if (absl::Status s = Directive(line.text); !s.ok()) return s;
    }
    if (absl::Status s = Validate(); !s.ok()) return s;
    return std::move(file_);
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat(id_, ".rules:", line_, ": ", what));
  }

  absl::StatusOr<RuleExpr> ParseExpr(absl::string_view text, bool line_allowed) {
    text = absl::StripAsciiWhitespace(text);
    if (text.empty()) return Error("expected an expression");
    absl::StatusOr<Expr> e = Expr::Parse(text);
    if (!e.ok()) return Error(absl::StrCat("in `", text, "`: ", e.status().message()));
    if (!line_allowed && e->reads_line()) {
      return Error(
          absl::StrCat("`", text, "`: v, md and ts are only available inside a key record"));
    }
    return RuleExpr{*std::move(e), line_};
  }

  absl::Status Directive(const std::string& text) {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(text, absl::MaxSplits(' ', 1));
    const absl::string_view word = parts.first;
    const absl::string_view rest = absl::StripAsciiWhitespace(parts.second);
    if (word == "state") return State(rest);
    if (word == "group_metrics") return Group(rest);
    if (word == "key") return Key(rest);
    if (word == "end_check") {
      absl::StatusOr<RuleExpr> e = ParseExpr(rest, /*line_allowed=*/false);
      if (!e.ok()) return e.status();
      file_.end_checks.push_back(*std::move(e));
      return absl::OkStatus();
    }
    if (word == "check" || word == "first_check" || word == "target" || word == "set" ||
        word == "chain") {
      if (record_ == nullptr) return Error(absl::StrCat("`", word, "` outside a key record"));
      if (word == "set") return Set(rest, text);
      if (word == "chain") {
        if (rest.empty() || rest.find(' ') != absl::string_view::npos) {
          return Error("chain expects one rule file name, e.g. `chain closed_{v}`");
        }
        Action a;
        a.kind = Action::Kind::kChain;
        a.chain_template = std::string(rest);
        a.source_line = line_;
        a.text = text;
        record_->actions.push_back(std::move(a));
        return absl::OkStatus();
      }
      absl::StatusOr<RuleExpr> e = ParseExpr(rest, /*line_allowed=*/true);
      if (!e.ok()) return e.status();
      if (word == "check") {
        record_->checks.push_back(*std::move(e));
      } else {
        std::optional<RuleExpr>& slot = word == "target" ? record_->target : record_->first_check;
        if (slot.has_value()) return Error(absl::StrCat("a record has at most one `", word, "`"));
        slot = *std::move(e);
      }
      return absl::OkStatus();
    }
    return Error(absl::StrCat("unknown directive `", word, "`"));
  }

  absl::Status State(absl::string_view rest) {
    size_t eq = rest.find('=');
    if (eq == absl::string_view::npos) return Error("expected `state NAME = EXPR`");
    absl::string_view name = absl::StripAsciiWhitespace(rest.substr(0, eq));
    if (!IsIdentifier(name)) return Error(absl::StrCat("invalid state name `", name, "`"));
    absl::StatusOr<RuleExpr> e = ParseExpr(rest.substr(eq + 1), /*line_allowed=*/false);
    if (!e.ok()) return e.status();
    file_.state.push_back({std::string(name), *std::move(e)});
    return absl::OkStatus();
  }

  absl::Status Group(absl::string_view rest) {
    std::vector<absl::string_view> w = absl::StrSplit(rest, ' ', absl::SkipEmpty());
    if (w.size() != 5 || w[1] != "by" || w[3] != "into") {
      return Error("expected `group_metrics SOURCE_KEY by FIELD into NEW_KEY`");
    }
    if (file_.group_metrics.has_value()) return Error("at most one group_metrics per file");
    file_.group_metrics =
        GroupMetrics{std::string(w[0]), std::string(w[2]), std::string(w[4]), line_};
    return absl::OkStatus();
  }

  absl::Status Key(absl::string_view rest) {
    std::pair<absl::string_view, absl::string_view> parts =
        absl::StrSplit(rest, absl::MaxSplits(' ', 1));
    KeyRecord r;
    r.name = std::string(parts.first);
    r.source_line = line_;
    if (r.name.empty()) return Error("expected `key NAME [REQUIREMENT]`");
    absl::string_view req = absl::StripAsciiWhitespace(parts.second);
    if (req.empty()) {
      r.requirement = Requirement::kNone;
    } else if (req == "optional") {
      r.requirement = Requirement::kOptional;
    } else if (req == "exactly_one") {
      r.requirement = Requirement::kExactlyOne;
    } else if (req == "at_least_one") {
      r.requirement = Requirement::kAtLeastOne;
    } else if (absl::ConsumePrefix(&req, "at_least(") && absl::ConsumeSuffix(&req, ")")) {
      r.requirement = Requirement::kAtLeast;
      if (!absl::SimpleAtoi(req, &r.at_least) || r.at_least < 0)
        return Error("at_least(N) needs a count");
    } else if (absl::ConsumePrefix(&req, "one_of(") && absl::ConsumeSuffix(&req, ")")) {
      r.requirement = Requirement::kOneOf;
      for (absl::string_view alt : absl::StrSplit(req, ',')) {
        alt = absl::StripAsciiWhitespace(alt);
        if (alt.empty()) return Error("empty name in one_of(...)");
        r.alternatives.emplace_back(alt);
      }
    } else {
      return Error(
          absl::StrCat("unknown requirement `", req,
                       "` (exactly_one, at_least_one, at_least(N), one_of(K, ...), optional)"));
    }
    // A later record for the same key replaces the earlier one in its position (official dict
    // update).
    for (KeyRecord& existing : file_.records) {
      if (existing.name == r.name) {
        existing = std::move(r);
        record_ = &existing;
        return absl::OkStatus();
      }
    }
    file_.records.push_back(std::move(r));
    record_ = &file_.records.back();
    return absl::OkStatus();
  }

  absl::Status Set(absl::string_view rest, const std::string& text) {
    Action a;
    a.source_line = line_;
    a.text = text;
    size_t when = FindWhen(rest);
    if (when != absl::string_view::npos) {
      absl::StatusOr<RuleExpr> cond = ParseExpr(rest.substr(when + 6), /*line_allowed=*/true);
      if (!cond.ok()) return cond.status();
      a.when = *std::move(cond);
      rest = rest.substr(0, when);
    }
    if (!absl::ConsumePrefix(&rest, "s."))
      return Error("expected `set s.NAME = EXPR` or `set s.NAME += EXPR`");
    size_t op = rest.find('=');
    if (op == absl::string_view::npos) return Error("expected `=` or `+=` in set");
    absl::string_view name = rest.substr(0, op);
    a.kind = Action::Kind::kSet;
    if (!name.empty() && name.back() == '+') {
      a.kind = Action::Kind::kAdd;
      name.remove_suffix(1);
    }
    name = absl::StripAsciiWhitespace(name);
    if (!IsIdentifier(name)) return Error(absl::StrCat("invalid state name `", name, "`"));
    a.state_name = std::string(name);
    absl::StatusOr<RuleExpr> value = ParseExpr(rest.substr(op + 1), /*line_allowed=*/true);
    if (!value.ok()) return value.status();
    a.value = *std::move(value);
    record_->actions.push_back(std::move(a));
    return absl::OkStatus();
  }

  absl::Status Validate() {
    for (const KeyRecord& r : file_.records) {
      for (const std::string& alt : r.alternatives) {
        if (file_.Find(alt) == nullptr) {
          line_ = r.source_line;
          return Error(
              absl::StrCat("one_of(", alt, ") names a key without its own record in this file"));
        }
      }
    }
    return absl::OkStatus();
  }

  std::string id_;
  RuleFile file_;
  KeyRecord* record_ = nullptr;
  int line_ = 0;
};

}  // namespace

absl::StatusOr<RuleFile> ReadRuleFile(absl::string_view text, const std::string& id) {
  return Reader(id).Read(text);
}

}  // namespace mlperf::checker
