#include "checker/package/cli_package.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include "absl/flags/flag.h"
#include "absl/strings/str_join.h"
#include "base/exit_codes.h"
#include "base/json.h"
#include "base/output.h"
#include "checker/engine.h"
#include "checker/package/claims_audit.h"
#include "checker/package/html_report.h"
#include "checker/package/layout.h"
#include "checker/package/package_check.h"
#include "checker/package/rcp_table.h"
#include "checker/package/results_table.h"
#include "checker/package/summary_csv.h"
#include "checker/report_format.h"
#include "fmt/format.h"
#include "logging/mllog_parser.h"

ABSL_FLAG(std::string, csv, "", "write the result summarizer's score table to this CSV file");
ABSL_FLAG(std::string, results_table, "",
          "write the full results table (one row per system and benchmark: the results page's "
          "columns, verdict, time to train, energy, batch size, samples to converge, RCP) as CSV");
ABSL_FLAG(std::string, results_table_json, "",
          "write the full results table as a JSON array of rows");
ABSL_FLAG(std::string, html, "",
          "write a self-contained HTML report (verdicts, runs, scores, findings, convergence "
          "curves against the target and the RCP band) to this file");
ABSL_FLAG(
    std::string, claims, "",
    "audit the time-to-train claims in this CSV (columns version, submitter, system, benchmark, "
    "minutes) against the scores computed from the logs");
ABSL_FLAG(bool, rcp_bypass, false, "let RCP failures pass, as the package checker's --rcp-bypass");
ABSL_FLAG(bool, seed_checker_bypass, false, "skip the seed checker, as the package checker's flag");
ABSL_FLAG(
    bool, write_scaling, false,
    "write scaling.json files into the checked tree as the official tools leave them (the only "
    "option that writes into the tree)");

namespace mlperf::package {
namespace {

namespace fs = std::filesystem;
using json::Value;

Value Opt(const std::optional<double>& v) { return v ? Value(*v) : Value(); }

Value Strings(const std::vector<std::string>& v) {
  json::Array a;
  for (const std::string& s : v) a.push_back(Value(s));
  return Value(std::move(a));
}

Value DirJson(const BenchmarkDirReport& d) {
  json::Array runs;
  for (const RunDetail& r : d.runs) {
    runs.push_back(Value(json::Object{{"path", r.path},
                                      {"verdict", r.compliant ? "PASS" : "FAIL"},
                                      {"minutes", Opt(r.minutes)},
                                      {"rcp_epochs", Opt(r.rcp_epochs)}}));
  }
  Value rcp;
  if (d.rcp_ran) {
    rcp = Value(json::Object{
        {"verdict", d.rcp ? Value(d.rcp->passed ? "PASS" : "FAIL") : Value("ERROR")},
        {"message", d.rcp ? Value(d.rcp->message) : Value(d.rcp_error)},
        {"scaling_factor", d.rcp && d.rcp->compared ? Value(d.rcp->normalization_factor) : Value()},
        {"scaling_json_written", d.rcp ? Opt(d.rcp->scaling_factor_written) : Value()},
        {"bypass", d.rcp_bypass}});
  }
  return Value(json::Object{{"path", d.path},
                            {"system", d.system},
                            {"benchmark", d.benchmark},
                            {"division", d.division},
                            {"verdict", d.skipped    ? "SKIPPED"
                                        : d.passed() ? "PASS"
                                                     : "FAIL"},
                            {"runs", static_cast<int64_t>(d.runs.size())},
                            {"required_runs", d.required_runs ? Value(*d.required_runs) : Value()},
                            {"converged", d.converged_runs()},
                            {"rcp", rcp},
                            {"seed_check", d.seed_check_ran        ? "ran"
                                           : d.seed_checker_bypass ? "bypassed"
                                                                   : "not applicable"},
                            {"scaling_factor", d.score.scaling_factor},
                            {"olympic_mean_minutes", Opt(d.score.olympic_mean)},
                            {"score_minutes", Opt(d.score.score)},
                            {"errors", Strings(d.errors)},
                            {"warnings", Strings(d.warnings)},
                            {"review_warnings", Strings(d.review_warnings)},
                            {"run_details", Value(std::move(runs))}});
}

std::string HumanDir(const BenchmarkDirReport& d) {
  std::string out = fmt::format("  {}  {}/{}",
                                d.skipped    ? "SKIP"
                                : d.passed() ? "PASS"
                                             : "FAIL",
                                d.system, d.benchmark);
  if (!d.skipped) {
    out += fmt::format(": {} runs, {} compliant", d.runs.size(), d.converged_runs());
    if (d.rcp) {
      out += fmt::format("; RCP {}: {}", d.rcp->passed ? "pass" : "fail", d.rcp->message);
      if (d.rcp->compared)
        out += fmt::format(" (factor {})", json::PythonFloatRepr(d.rcp->normalization_factor));
    }
    out += d.score.score ? fmt::format("; score {} min", json::PythonFloatRepr(*d.score.score))
                         : "; no score";
  }
  out += "\n";
  for (const std::string& e : d.errors) out += fmt::format("      error: {}\n", e);
  for (const std::string& w : d.warnings) out += fmt::format("      warning: {}\n", w);
  for (const std::string& w : d.review_warnings) out += fmt::format("      review: {}\n", w);
  for (const RunDetail& r : d.runs) {
    if (!r.compliant) {
      std::string log = checker::FormatHuman(r.log);
      for (size_t p = 0; (p = log.find('\n', p)) != std::string::npos && p + 1 < log.size(); p += 7)
        log.insert(p + 1, "      ");
      out += "      " + log;
    }
  }
  return out;
}

std::string HumanOrg(const OrgReport& o) {
  std::string out = fmt::format("{}  {}  (package of {}, ruleset {})\n",
                                o.passed() ? "PASS" : "FAIL", o.path, o.name, o.ruleset);
  for (const std::string& e : o.errors) out += fmt::format("    error: {}\n", e);
  for (const std::string& w : o.warnings) out += fmt::format("    warning: {}\n", w);
  for (const std::string& n : o.notes) out += fmt::format("    note: {}\n", n);
  for (const BenchmarkDirReport& d : o.dirs) out += HumanDir(d);
  return out;
}

std::vector<AuditedClaim> AuditClaims(const std::vector<Claim>& claims,
                                      const std::vector<OrgReport>& orgs) {
  std::vector<AuditedClaim> out;
  for (const Claim& claim : claims) {
    ComputedScore c;
    c.unavailable =
        fmt::format("no checked package of {} for round {}", claim.submitter, claim.version);
    for (const OrgReport& o : orgs) {
      if (o.name != claim.submitter || o.ruleset.substr(0, o.ruleset.rfind('.')) != claim.version)
        continue;
      c.unavailable = fmt::format("no directory results/{}/{}", claim.system, claim.benchmark);
      for (const BenchmarkDirReport& d : o.dirs) {
        if (d.system != claim.system || d.benchmark != claim.benchmark || d.skipped) continue;
        c.olympic_mean = d.score.olympic_mean;
        c.normalized = d.score.score;
        c.scaling_factor = d.score.scaling_factor;
        c.unavailable = d.score.score
                            ? ""
                            : fmt::format("{} of {} runs dropped (at most {} allowed)",
                                          d.score.dropped_runs, d.runs.size(), d.score.max_dropped);
      }
    }
    out.push_back({AuditClaim(claim, c), c});
  }
  return out;
}

Value ClaimJson(const AuditedClaim& r) {
  const Claim& c = r.audit.claim;
  json::Object o{{"version", c.version},
                 {"submitter", c.submitter},
                 {"system", c.system},
                 {"benchmark", c.benchmark},
                 {"claimed", c.minutes},
                 {"computed_raw", Opt(r.computed.olympic_mean)},
                 {"computed_normalised", Opt(r.computed.normalized)},
                 {"verdict", std::string(ClaimMatchName(r.audit.match))},
                 {"difference", Opt(r.audit.difference)},
                 {"reason", r.audit.reason}};
  json::Object other;
  for (const auto& [k, v] : c.other_columns) other.emplace_back(k, v);
  o.emplace_back("other_columns", Value(std::move(other)));
  return Value(std::move(o));
}

bool ValidRuleset(const std::string& r, const checker::RuleLibrary& rules) {
  return PackageRulesetSupported(rules, r);
}

absl::StatusOr<std::string> ReadSmall(const std::string& path) {
  return ReadFileLimited(path, 64ull << 20);
}

// What the command-line paths resolve to, before anything is checked.
struct Targets {
  struct Org {
    fs::path path;
    PackageOptions options;
  };
  std::vector<Org> orgs;
  std::vector<std::string> log_files;
  std::vector<std::pair<fs::path, std::string>> unchecked;  // failed, not skipped
};

// Resolves every path first, so that a usage error prints nothing else.
absl::StatusOr<Targets> ResolvePaths(const std::vector<std::string>& paths,
                                     const CliOptions& options, const checker::RuleLibrary& rules) {
  Targets targets;
  for (const std::string& p : paths) {
    absl::StatusOr<PathTarget> t = ClassifyPath(p);
    if (!t.ok()) return t.status();
    if (t->kind == PathKind::kLogFile) {
      targets.log_files.push_back(p);
      continue;
    }
    targets.unchecked.insert(targets.unchecked.end(), t->unchecked.begin(), t->unchecked.end());
    for (const fs::path& org : t->organizations) {
      absl::StatusOr<std::string> ruleset = PackageRuleset(org, options.ruleset, rules);
      if (!ruleset.ok()) return ruleset.status();
      targets.orgs.push_back({org,
                              {.ruleset = *ruleset,
                               .folder_ruleset = RulesetFromPath(org),
                               .rcp_bypass = absl::GetFlag(FLAGS_rcp_bypass),
                               .seed_checker_bypass = absl::GetFlag(FLAGS_seed_checker_bypass),
                               .werror = options.werror,
                               .jobs = options.jobs,
                               .only_system = t->only_system,
                               .only_benchmark = t->only_benchmark,
                               .report_details = !absl::GetFlag(FLAGS_html).empty()}});
    }
  }
  return targets;
}

// The claims of --claims; none without the flag.
absl::StatusOr<std::vector<Claim>> ReadClaims() {
  const std::string path = absl::GetFlag(FLAGS_claims);
  if (path.empty()) return std::vector<Claim>{};
  absl::StatusOr<std::string> text = ReadSmall(path);
  absl::StatusOr<std::vector<Claim>> parsed =
      text.ok() ? ParseClaimsCsv(*text, path) : absl::StatusOr<std::vector<Claim>>(text.status());
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(),
                        fmt::format("claims: {}", std::string(parsed.status().message())));
  }
  return parsed;
}

// Plain log files given beside packages, checked as the per-log mode does.
std::vector<checker::LogReport> CheckLogFiles(const std::vector<std::string>& files,
                                              const std::string& ruleset, bool werror,
                                              const checker::RuleLibrary& rules) {
  std::vector<checker::LogReport> logs;
  for (const std::string& f : files) {
    absl::StatusOr<std::string> text = ReadFileLimited(f, 512ull << 20);
    if (!text.ok()) {
      checker::LogReport r{.path = f, .ruleset = ruleset, .input_error = true};
      r.errors.push_back({.message = std::string(text.status().message())});
      logs.push_back(std::move(r));
      continue;
    }
    logs.push_back(
        checker::CheckLog(mllog::ParseText(*text, f), rules, ruleset, {.werror = werror}));
  }
  return logs;
}

// --csv, --results-table[-json] and --write-scaling; false when a file could
// not be written.
bool WriteRequestedFiles(const std::vector<OrgReport>& orgs) {
  bool ok = true;
  std::vector<const OrgReport*> ptrs;
  for (const OrgReport& o : orgs) ptrs.push_back(&o);
  const std::string csv = absl::GetFlag(FLAGS_csv);
  const std::string table = absl::GetFlag(FLAGS_results_table);
  const std::string table_json = absl::GetFlag(FLAGS_results_table_json);
  std::optional<ResultsTable> results;
  if (!table.empty() || !table_json.empty()) results = BuildResultsTable(ptrs);
  for (const auto& [flag, path, text] :
       {std::tuple<const char*, std::string, std::function<std::string()>>{
            "csv", csv, [&] { return SummaryCsv(ptrs); }},
        {"results-table", table, [&] { return ResultsTableCsv(*results); }},
        {"results-table-json", table_json, [&] { return ResultsTableJson(*results); }}}) {
    if (path.empty()) continue;
    if (absl::Status s = base::WriteOutput(path, text()); !s.ok()) {
      std::fprintf(stderr, "compliance_check: --%s: %s\n", flag, std::string(s.message()).c_str());
      ok = false;
    }
  }
  if (absl::GetFlag(FLAGS_write_scaling)) {
    for (const OrgReport& o : orgs) {
      if (absl::Status s = WriteScalingFiles(o); !s.ok()) {
        std::fprintf(stderr, "compliance_check: %s\n", std::string(s.message()).c_str());
        ok = false;
      }
    }
  }
  return ok;
}

// The per-log JSON document, extended with packages and claims.
std::string JsonReport(const std::string& log_ruleset, const std::vector<checker::LogReport>& logs,
                       const std::vector<OrgReport>& orgs, const std::vector<AuditedClaim>& audits,
                       bool all_pass) {
  std::vector<checker::LogReport> all_logs = logs;
  for (const OrgReport& o : orgs) {
    for (const BenchmarkDirReport& d : o.dirs) {
      for (const RunDetail& r : d.runs) all_logs.push_back(r.log);
    }
  }
  absl::StatusOr<Value> doc =
      json::Parse(checker::FormatJson(log_ruleset, all_logs), {.encoding = json::Encoding::kUtf8});
  if (!doc.ok()) doc = Value(json::Object{{"tool", "compliance_check"}});
  json::Array packages;
  for (const OrgReport& o : orgs) {
    json::Array dirs;
    for (const BenchmarkDirReport& d : o.dirs) dirs.push_back(DirJson(d));
    packages.push_back(Value(json::Object{{"path", o.path},
                                          {"organization", o.name},
                                          {"ruleset", o.ruleset},
                                          {"verdict", o.passed() ? "PASS" : "FAIL"},
                                          {"errors", Strings(o.errors)},
                                          {"warnings", Strings(o.warnings)},
                                          {"notes", Strings(o.notes)},
                                          {"benchmarks", Value(std::move(dirs))}}));
  }
  json::Array claims_json;
  for (const AuditedClaim& r : audits) claims_json.push_back(ClaimJson(r));
  doc->Set("verdict", all_pass ? "PASS" : "FAIL");
  doc->Set("packages", Value(std::move(packages)));
  doc->Set("claims", Value(std::move(claims_json)));
  return json::Dump(*doc) + "\n";
}

std::string HumanClaim(const AuditedClaim& r) {
  const Claim& c = r.audit.claim;
  std::string out =
      fmt::format("CLAIM {} {} {}/{} {} min: {}", c.version, c.submitter, c.system, c.benchmark,
                  json::PythonFloatRepr(c.minutes), ClaimMatchName(r.audit.match));
  if (r.audit.difference) out += fmt::format(" (difference {:.6g} min)", *r.audit.difference);
  if (!r.audit.reason.empty()) out += fmt::format(": {}", r.audit.reason);
  return out + "\n";
}

std::string HumanReport(const std::vector<checker::LogReport>& logs,
                        const std::vector<OrgReport>& orgs,
                        const std::vector<AuditedClaim>& audits) {
  std::string out;
  for (const checker::LogReport& r : logs) out += checker::FormatHuman(r);
  for (const OrgReport& o : orgs) out += HumanOrg(o);
  for (const AuditedClaim& r : audits) out += HumanClaim(r);
  return out;
}

// The first input that could not be read, for the one line on stderr; ""
// when every input was read (only an output failed, already said).
std::string FirstInputError(const std::vector<checker::LogReport>& logs,
                            const std::vector<OrgReport>& orgs) {
  std::vector<std::string> found;  // one per log or package with an input error
  for (const checker::LogReport& r : logs) {
    if (r.input_error) found.push_back(r.errors.empty() ? r.path : r.errors.front().message);
  }
  for (const OrgReport& o : orgs) {
    if (!o.input_error) continue;
    // The package's own error, else its first directory's or run's.
    std::string first = o.errors.empty() ? "" : o.errors.front();
    for (const BenchmarkDirReport& d : o.dirs) {
      if (first.empty() && !d.errors.empty()) first = d.errors.front();
      for (const RunDetail& run : d.runs) {
        if (first.empty() && run.log.input_error && !run.log.errors.empty())
          first = run.log.errors.front().message;
      }
    }
    found.push_back(first.empty() ? o.path : first);
  }
  if (found.empty()) return "";
  const std::string first = found.front().substr(0, 500);
  return found.size() == 1
             ? fmt::format("input error: {}", first)
             : fmt::format("{} inputs with errors; the first: {}", found.size(), first);
}

}  // namespace

bool AnyDirectory(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) return true;
  }
  return false;
}

int RunPackageCli(const std::vector<std::string>& paths, const CliOptions& options,
                  const checker::RuleLibrary& rules) {
  if (options.ruleset && !ValidRuleset(*options.ruleset, rules)) {
    std::vector<std::string> known;
    for (const std::string& r : rules.Rulesets()) {
      if (ValidRuleset(r, rules)) known.push_back(r);
    }
    std::fprintf(stderr,
                 "compliance_check: ruleset %s is not a training ruleset we know; known: %s\n",
                 options.ruleset->c_str(), absl::StrJoin(known, ", ").c_str());
    return kExitUsage;
  }
  // No report may replace a log, the claims or another report.
  base::OutputGuard guard;
  for (const std::string& input : paths) guard.AddInput(input, /*walk=*/true);
  if (const std::string claims = absl::GetFlag(FLAGS_claims); !claims.empty())
    guard.AddInput(claims);
  for (const auto& [flag, output] :
       {std::pair<const char*, std::string>{"csv", absl::GetFlag(FLAGS_csv)},
        {"results-table", absl::GetFlag(FLAGS_results_table)},
        {"results-table-json", absl::GetFlag(FLAGS_results_table_json)},
        {"html", absl::GetFlag(FLAGS_html)}}) {
    if (output.empty()) continue;
    if (absl::Status s = guard.Claim(flag, output); !s.ok()) {
      std::fprintf(stderr, "compliance_check: %s\n", std::string(s.message()).c_str());
      return kExitUsage;
    }
  }
  absl::StatusOr<Targets> targets = ResolvePaths(paths, options, rules);
  absl::StatusOr<std::vector<Claim>> claims =
      targets.ok() ? ReadClaims() : absl::StatusOr<std::vector<Claim>>(targets.status());
  if (!claims.ok()) {
    std::fprintf(stderr, "compliance_check: %s\n", std::string(claims.status().message()).c_str());
    return kExitUsage;
  }

  const std::string log_ruleset = options.ruleset.value_or(options.default_ruleset);
  std::vector<OrgReport> orgs;
  for (const Targets::Org& o : targets->orgs)
    orgs.push_back(CheckOrganization(o.path, rules, o.options));
  for (const auto& [path, why] : targets->unchecked) {
    orgs.push_back({.path = DisplayPath(path),
                    .name = path.filename().string(),
                    .ruleset = RulesetFromPath(path).value_or(log_ruleset),
                    .errors = {why},
                    .input_error = true});
  }
  const std::vector<checker::LogReport> logs =
      CheckLogFiles(targets->log_files, log_ruleset, options.werror, rules);
  const std::vector<AuditedClaim> audits = AuditClaims(*claims, orgs);

  bool input_error = false, all_pass = true;
  for (const checker::LogReport& r : logs) {
    input_error = input_error || r.input_error;
    all_pass = all_pass && r.compliant();
  }
  for (const OrgReport& o : orgs) {
    input_error = input_error || o.input_error;
    all_pass = all_pass && o.passed();
  }
  if (!WriteRequestedFiles(orgs)) input_error = true;
  if (const std::string html = absl::GetFlag(FLAGS_html); !html.empty()) {
    const std::string page = HtmlReport({.inputs = paths,
                                         .logs = logs,
                                         .orgs = &orgs,
                                         .claims = audits,
                                         .claims_given = !absl::GetFlag(FLAGS_claims).empty(),
                                         .all_pass = all_pass && !input_error});
    if (absl::Status s = base::WriteOutput(html, page); !s.ok()) {
      std::fprintf(stderr, "compliance_check: --html: %s\n", std::string(s.message()).c_str());
      input_error = true;
    }
  }

  const std::string out = options.json ? JsonReport(log_ruleset, logs, orgs, audits, all_pass)
                                       : HumanReport(logs, orgs, audits);
  if (absl::Status s = base::WriteStdout(out); !s.ok()) {
    std::fprintf(stderr, "compliance_check: %s\n", std::string(s.message()).c_str());
    return kExitUsage;
  }
  if (input_error) {
    // Exit 2 always says why on stderr too, not only in the report.
    if (const std::string why = FirstInputError(logs, orgs); !why.empty())
      std::fprintf(stderr, "compliance_check: %s\n", why.c_str());
    return kExitUsage;
  }
  return all_pass ? kExitOk : kExitFailed;
}

}  // namespace mlperf::package
