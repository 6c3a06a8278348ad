#include "checker/report_format.h"

#include "absl/strings/str_cat.h"
#include "base/json.h"

namespace mlperf::checker {
namespace {

using json::Value;

// Quoted log lines are cut here; the file line number leads to the rest.
constexpr size_t kMaxQuote = 300;

std::string Location(const Finding& f) {
  std::string out;
  if (!f.key.empty()) absl::StrAppend(&out, "'", f.key, "'");
  if (f.line >= 0) absl::StrAppend(&out, out.empty() ? "" : " ", "at MLLOG line ", f.line);
  if (f.file_line > 0)
    absl::StrAppend(&out, out.empty() ? "at " : " ", "(file line ", f.file_line, ")");
  if (!f.rule.empty()) absl::StrAppend(&out, out.empty() ? "" : " ", "[", f.rule, "]");
  return out;
}

void AppendFinding(std::string& out, const char* label, const Finding& f) {
  absl::StrAppend(&out, "  ", label, ": ", Location(f), "\n      ", f.message, "\n");
  if (!f.quote.empty()) {
    absl::StrAppend(&out, "      > ",
                    f.quote.size() > kMaxQuote ? f.quote.substr(0, kMaxQuote) + "..." : f.quote,
                    "\n");
  }
}

Value FindingJson(const Finding& f) {
  json::Object o;
  o.emplace_back("key", f.key.empty() ? Value() : Value(f.key));
  o.emplace_back("line", f.line >= 0 ? Value(f.line) : Value());
  o.emplace_back("file_line", f.file_line > 0 ? Value(f.file_line) : Value());
  std::string message = f.message;
  if (!f.rule.empty()) message = absl::StrCat("[", f.rule, "] ", message);
  o.emplace_back("message", Value(std::move(message)));
  return Value(std::move(o));
}

std::string Identity(const LogReport& r) {
  std::string out = absl::StrCat("ruleset ", r.ruleset);
  if (r.division) absl::StrAppend(&out, ", ", *r.division);
  if (r.benchmark) absl::StrAppend(&out, " ", *r.benchmark);
  return out;
}

}  // namespace

std::string FormatHuman(const LogReport& report) {
  std::string out = absl::StrCat(report.compliant() ? "PASS" : "FAIL", "  ", report.path, "  (",
                                 Identity(report), ")");
  if (!report.errors.empty() || !report.warnings.empty()) {
    absl::StrAppend(&out, ": ", report.errors.size(),
                    report.errors.size() == 1 ? " error" : " errors", ", ", report.warnings.size(),
                    report.warnings.size() == 1 ? " warning" : " warnings");
  }
  out += "\n";
  for (const Finding& f : report.errors) AppendFinding(out, "error", f);
  for (const Finding& f : report.warnings) AppendFinding(out, "warning", f);
  return out;
}

std::string FormatJson(const std::string& ruleset, const std::vector<LogReport>& reports) {
  bool all_pass = true;
  json::Array logs;
  for (const LogReport& r : reports) {
    all_pass = all_pass && r.compliant();
    json::Array errors, warnings;
    for (const Finding& f : r.errors) errors.push_back(FindingJson(f));
    for (const Finding& f : r.warnings) warnings.push_back(FindingJson(f));
    json::Object log;
    log.emplace_back("path", Value(r.path));
    log.emplace_back("ruleset", Value(r.ruleset));
    log.emplace_back("benchmark", r.benchmark ? Value(*r.benchmark) : Value());
    log.emplace_back("division", r.division ? Value(*r.division) : Value());
    log.emplace_back("verdict", Value(r.compliant() ? "PASS" : "FAIL"));
    log.emplace_back("errors", Value(std::move(errors)));
    log.emplace_back("warnings", Value(std::move(warnings)));
    logs.push_back(Value(std::move(log)));
  }
  json::Object doc;
  doc.emplace_back("tool", Value("compliance_check"));
  doc.emplace_back("ruleset", Value(ruleset));
  doc.emplace_back("verdict", Value(all_pass ? "PASS" : "FAIL"));
  doc.emplace_back("logs", Value(std::move(logs)));
  return json::Dump(Value(std::move(doc))) + "\n";
}

}  // namespace mlperf::checker
