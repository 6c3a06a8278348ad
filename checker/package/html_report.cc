#include "checker/package/html_report.h"

#include <algorithm>
#include <cmath>
#include <ctime>

#include "base/json.h"
#include "base/svg_chart.h"
#include "base/utf8.h"
#include "base/version.h"
#include "checker/package/rcp_convergence.h"
#include "fmt/format.h"

namespace mlperf::package {
namespace {

constexpr size_t kMaxQuoteBytes = 2000;  // a quoted log line longer than this is cut

// Text from logs and paths may hold any bytes: a byte that starts no valid
// UTF-8 sequence is shown as its latin-1 character.
std::string Utf8(std::string_view s) {
  if (json::IsValidUtf8(s)) return std::string(s);
  std::string out;
  for (size_t i = 0; i < s.size();) json::AppendUtf8(json::NextCodePoint(s, i), out);
  return out;
}

std::string Text(std::string_view s) { return base::XmlEscape(Utf8(s)); }

std::string Num(double v) { return json::PythonFloatRepr(v); }
std::string Num(const std::optional<double>& v) { return v ? Num(*v) : ""; }

std::string Minutes(const std::optional<double>& v) {
  return v ? fmt::format("{:.4f}", *v) : "&ndash;";
}

std::string_view VerdictClass(std::string_view verdict) {
  return verdict == "PASS" ? "pass" : verdict == "FAIL" ? "fail" : "other";
}

std::string VerdictCell(std::string_view verdict) {
  return fmt::format("<td class=\"verdict {}\" data-verdict=\"{}\">{}</td>", VerdictClass(verdict),
                     verdict, verdict);
}

// The lowest olympic mean the RCP check accepts against `rec` (its comparison).
double MinAcceptableMean(const RcpRecord& rec) { return rec.mean / rec.max_speedup; }

bool Unconverged(const RunDetail& r) { return r.rcp_epochs && *r.rcp_epochs >= kUnconvergedEpochs; }

std::string DirVerdict(const BenchmarkDirReport& d) {
  return d.skipped ? "SKIPPED" : d.passed() ? "PASS" : "FAIL";
}

std::string UtcTime(double time_ms) {
  const std::time_t t = static_cast<std::time_t>(std::floor(time_ms / 1000));
  std::tm tm{};
  if (!gmtime_r(&t, &tm)) return "";
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string List(const char* cls, const char* title, const std::vector<std::string>& items) {
  if (items.empty()) return "";
  std::string out =
      fmt::format("<p class=\"{}\"><b>{}</b></p><ul class=\"{}\">\n", cls, title, cls);
  for (const std::string& i : items) out += fmt::format("<li>{}</li>\n", Text(i));
  return out + "</ul>\n";
}

// A per-log finding with where it is and the line it quotes.
std::string FindingItem(const checker::Finding& f, const std::string& path) {
  std::string where = path;
  if (f.file_line > 0) where += fmt::format(":{}", f.file_line);
  std::string out = fmt::format("<li><code>{}</code>", Text(where));
  if (!f.key.empty()) out += fmt::format(" <code>{}</code>", Text(f.key));
  out += fmt::format(": {}", Text(f.message));
  if (!f.rule.empty()) out += fmt::format(" <span class=\"rule\">(rule {})</span>", Text(f.rule));
  if (!f.quote.empty()) {
    std::string_view q = f.quote;
    const bool cut = q.size() > kMaxQuoteBytes;
    out += fmt::format("<pre>{}{}</pre>", Text(q.substr(0, kMaxQuoteBytes)), cut ? " [...]" : "");
  }
  return out + "</li>\n";
}

std::string LogFindings(const checker::LogReport& log) {
  std::string out;
  for (const checker::Finding& f : log.errors) out += FindingItem(f, log.path);
  for (const checker::Finding& f : log.warnings) out += FindingItem(f, log.path);
  return out;
}

std::string SummaryTable(const std::vector<OrgReport>& orgs) {
  std::string out =
      "<table class=\"summary\"><thead><tr><th>Organisation</th><th>Ruleset</th><th>System</th>"
      "<th>Benchmark</th><th>Division</th><th>Verdict</th><th>Runs</th><th>Score (min)</th>"
      "<th>Raw olympic mean (min)</th><th>RCP factor</th></tr></thead><tbody>\n";
  size_t index = 0;
  for (size_t o = 0; o < orgs.size(); ++o) {
    const OrgReport& org = orgs[o];
    out += fmt::format(
        "<tr class=\"org\" data-org=\"{0}\" data-path=\"{1}\"><td colspan=\"5\"><a "
        "href=\"#o{2}\">{0}</a> <span class=\"path\">{1}</span> (package)</td>{3}"
        "<td colspan=\"4\"></td></tr>\n",
        Text(org.name), Text(org.path), o, VerdictCell(org.passed() ? "PASS" : "FAIL"));
    for (const BenchmarkDirReport& d : org.dirs) {
      out += fmt::format(
          "<tr data-org=\"{}\" data-system=\"{}\" data-benchmark=\"{}\"><td>{}</td><td>{}</td>"
          "<td>{}</td><td><a href=\"#d{}\">{}</a></td><td>{}</td>{}<td>{}</td>"
          "<td class=\"num\" data-score=\"{}\">{}</td><td class=\"num\">{}</td>"
          "<td class=\"num\">{}</td></tr>\n",
          Text(org.name), Text(d.system), Text(d.benchmark), Text(org.name), Text(org.ruleset),
          Text(d.system), index++, Text(d.benchmark), Text(d.division), VerdictCell(DirVerdict(d)),
          d.skipped ? "" : fmt::format("{}/{}", d.runs.size(), d.required_runs.value_or(0)),
          Num(d.score.score), d.score.score ? fmt::format("{:.3f}", *d.score.score) : "&ndash;",
          d.score.olympic_mean ? fmt::format("{:.3f}", *d.score.olympic_mean) : "&ndash;",
          d.skipped ? "" : fmt::format("{:.4f}", d.score.scaling_factor));
    }
  }
  return out + "</tbody></table>\n";
}

std::string RunsTable(const BenchmarkDirReport& d) {
  std::string out =
      "<table class=\"runs\"><thead><tr><th>Run</th><th>Seed</th><th>run_start (UTC)</th>"
      "<th>Time to train (min)</th><th>Compliant</th><th>Converged at (RCP reading)</th>"
      "<th>Olympic mean</th></tr></thead><tbody>\n";
  for (size_t i = 0; i < d.runs.size(); ++i) {
    const RunDetail& r = d.runs[i];
    std::string seeds;
    for (const std::string& s : r.seeds) seeds += (seeds.empty() ? "" : ", ") + s;
    std::string converged = "&ndash;";
    if (r.rcp_epochs) {
      converged = Unconverged(r) ? "<span class=\"bad\">not converged</span>"
                                 : base::CompactNumber(*r.rcp_epochs);
    }
    const bool counted = i < d.score.counted.size() && d.score.counted[i];
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>{}<td>{}</td><td>{}</td>"
        "</tr>\n",
        Text(r.stem), Text(seeds), r.run_start_ms ? UtcTime(*r.run_start_ms) : "",
        r.minutes ? fmt::format("{:.3f}", *r.minutes) : Text(r.minutes_error),
        VerdictCell(r.compliant ? "PASS" : "FAIL"), converged,
        counted ? "counted" : "<span class=\"dropped\">dropped</span>");
  }
  return out + "</tbody></table>\n";
}

std::string RcpTableHtml(const BenchmarkDirReport& d) {
  if (!d.rcp_ran) return "";
  if (!d.rcp)
    return fmt::format("<p class=\"bad\">RCP check could not run: {}</p>\n", Text(d.rcp_error));
  const RcpVerdict& v = *d.rcp;
  std::string out =
      fmt::format("<p>RCP check: <b class=\"{}\">{}</b> &mdash; {} (global batch size {}{})</p>\n",
                  v.passed ? "good" : "bad", v.passed ? "pass" : "fail", Text(v.message),
                  Text(json::Dump(v.global_batch_size)), d.rcp_bypass ? ", bypass requested" : "");
  if (!v.record) return out;
  const RcpRecord& rec = *v.record;
  out += fmt::format(
      "<table class=\"rcp\"><tr><th>RCP record</th><td>{}{}</td></tr>"
      "<tr><th>RCP mean</th><td class=\"num\">{}</td></tr>"
      "<tr><th>Minimum acceptable mean</th><td class=\"num\">{}</td></tr>"
      "<tr><th>This package's olympic mean</th><td class=\"num\">{}</td></tr>"
      "<tr><th>Normalisation factor</th><td class=\"num\">{}</td></tr></table>\n",
      Text(rec.name), rec.interpolated ? " (interpolated between its neighbours)" : "",
      base::CompactNumber(rec.mean), base::CompactNumber(MinAcceptableMean(rec)),
      v.submission_mean ? base::CompactNumber(*v.submission_mean) : "&ndash;",
      Num(v.normalization_factor));
  return out;
}

std::string PruningNoteHtml(const BenchmarkDirReport& d) {
  if (!d.pruning_note) return "";
  const PruningNote& n = *d.pruning_note;
  std::string sizes;
  for (int64_t bs : n.kept_above_envelope)
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(bs);
  std::string effect;
  if (!n.verdict_differs && !n.factor_differs) {
    effect = "this package's verdict and normalisation factor would be the same";
  } else {
    effect = fmt::format("this package would get: {} ({}), factor {} (officially: {}, factor {})",
                         n.envelope.passed ? "pass" : "fail", n.envelope.message,
                         Num(n.envelope.normalization_factor), d.rcp->passed ? "pass" : "fail",
                         Num(d.rcp->normalization_factor));
  }
  return fmt::format(
      "<p class=\"note\"><b>Note on RCP pruning</b> (not part of the verdict): the official "
      "pruning "
      "keeps batch size(s) {} although they lie above the lower convex envelope of the RCP means "
      "(it never re-tests a kept point after removing its neighbour; mlcommons/logging issue "
      "#368). With the envelope, {}.</p>\n",
      Text(sizes), Text(effect));
}

std::string AxisLabel(const std::string& x_key) {
  return x_key == "epoch_num" ? "epoch_num (the unit of the RCP)" : x_key;
}

// One chart per metric: every run, the target, the RCP band and this package's mean.
std::string Charts(const BenchmarkDirReport& d, size_t index) {
  std::vector<std::string> metrics;
  std::string x_key;
  for (const RunDetail& r : d.runs) {
    if (x_key.empty()) x_key = r.curves.x_key;
    for (const ConvergenceCurve& c : r.curves.curves) {
      if (std::find(metrics.begin(), metrics.end(), c.metric) == metrics.end())
        metrics.push_back(c.metric);
    }
  }
  if (metrics.empty()) {
    return d.runs.empty()
               ? ""
               : "<p class=\"note\">No evaluation lines with a numeric x value to plot.</p>\n";
  }
  std::string out;
  for (size_t m = 0; m < metrics.size(); ++m) {
    base::LineChart chart{
        .id = fmt::format("c{}-{}", index, m),
        .title = Utf8(fmt::format("{} / {}: {}", d.system, d.benchmark, metrics[m])),
        .x_label = Utf8(AxisLabel(x_key)),
        .y_label = Utf8(metrics[m])};
    for (const RunDetail& r : d.runs) {
      for (const ConvergenceCurve& c : r.curves.curves) {
        if (c.metric != metrics[m]) continue;
        base::ChartSeries s{.name = Utf8(r.stem), .dashed = !r.compliant || Unconverged(r)};
        for (const CurvePoint& p : c.points) s.points.emplace_back(p.x, p.y);
        chart.series.push_back(std::move(s));
      }
    }
    for (const QualityTarget& t : d.targets) {
      if (t.metric == metrics[m])
        chart.y_lines.push_back({t.value, fmt::format("target {} {}", t.at_least ? ">=" : "<=",
                                                      base::CompactNumber(t.value))});
    }
    if (d.rcp && d.rcp->record) {
      const RcpRecord& rec = *d.rcp->record;
      chart.x_bands.push_back(
          {MinAcceptableMean(rec), rec.mean,
           fmt::format("RCP {}: minimum acceptable mean {} to mean {}", Utf8(rec.name),
                       base::CompactNumber(MinAcceptableMean(rec)),
                       base::CompactNumber(rec.mean))});
      chart.x_lines.push_back({rec.mean, "RCP mean"});
      if (d.rcp->submission_mean && std::isfinite(*d.rcp->submission_mean) &&
          *d.rcp->submission_mean < kUnconvergedEpochs)
        chart.x_lines.push_back({*d.rcp->submission_mean, "this package's mean"});
    }
    out += "<figure>" + base::RenderSvg(chart) + "</figure>\n";
  }
  if (d.rcp && d.rcp->record) {
    out +=
        "<p class=\"legend\">Green band: from the RCP's minimum acceptable mean to its mean, for "
        "this batch size; a package mean left of the band fails the RCP check, one inside it "
        "is normalised by the factor. Dashed: runs that did not comply or converge.</p>\n";
  }
  return out;
}

std::string DirSection(const BenchmarkDirReport& d, size_t index) {
  std::string out = fmt::format(
      "<section class=\"dir\" id=\"d{}\"><h3>{} / {} <span class=\"badge {}\">{}</span></h3>\n"
      "<p class=\"path\">{}</p>\n",
      index, Text(d.system), Text(d.benchmark), VerdictClass(DirVerdict(d)), DirVerdict(d),
      Text(d.path));
  if (!d.skipped) {
    out += fmt::format("<p>Division {}; {} of {} required runs; seed check {}.", Text(d.division),
                       d.runs.size(), d.required_runs.value_or(0),
                       d.seed_check_ran        ? "ran"
                       : d.seed_checker_bypass ? "bypassed"
                                               : "not applicable");
    if (d.score.score) {
      out += fmt::format(" Score <b>{:.3f}</b> min = raw olympic mean {:.3f} &times; factor {}.",
                         *d.score.score, *d.score.olympic_mean, Num(d.score.scaling_factor));
    } else {
      out += fmt::format(" No score: {} of {} runs dropped, at most {} allowed.",
                         d.score.dropped_runs, d.runs.size(), d.score.max_dropped);
    }
    out += "</p>\n" + RunsTable(d) + RcpTableHtml(d) + PruningNoteHtml(d) + Charts(d, index);
  }
  out += List("bad", "Errors", d.errors);
  out += List("warn", "Warnings", d.warnings);
  out += List("review", "Reviewer notes (not part of the verdict)", d.review_warnings);
  std::string findings;
  for (const RunDetail& r : d.runs) findings += LogFindings(r.log);
  if (!findings.empty())
    out +=
        "<p><b>Findings in the result logs</b></p><ul class=\"findings\">\n" + findings + "</ul>\n";
  return out + "</section>\n";
}

std::string ClaimsTable(const std::vector<AuditedClaim>& claims) {
  std::string out =
      "<h2 id=\"claims\">Claims audit</h2>\n<table class=\"claims\"><thead><tr><th>Round</th>"
      "<th>Submitter</th><th>System</th><th>Benchmark</th><th>Claimed (min)</th>"
      "<th>Computed raw</th><th>Computed normalised</th><th>Match</th><th>Difference</th>"
      "<th>Reason</th></tr></thead><tbody>\n";
  for (const AuditedClaim& r : claims) {
    const Claim& c = r.audit.claim;
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td data-verdict=\"{}\">{}</td>"
        "<td class=\"num\">{}</td><td>{}</td></tr>\n",
        Text(c.version), Text(c.submitter), Text(c.system), Text(c.benchmark),
        fmt::format("{:.4f}", c.minutes), Minutes(r.computed.olympic_mean),
        Minutes(r.computed.normalized), ClaimMatchName(r.audit.match),
        ClaimMatchName(r.audit.match),
        r.audit.difference ? fmt::format("{:.6g}", *r.audit.difference) : "", Text(r.audit.reason));
  }
  return out + "</tbody></table>\n";
}

constexpr char kStyle[] = R"(
body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1100px}
h1{font-size:1.5em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}
h3{font-size:1.1em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em}
th,td{border:1px solid #ccc;padding:2px 6px;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.org td{background:#fafafa;font-weight:bold}
.verdict.pass,.badge.pass{background:#d7f0d7;color:#064}.verdict.fail,.badge.fail{background:#f8d3d3;color:#900}
.badge{padding:1px 8px;border-radius:3px;font-size:.85em}
.bad{color:#900}.warn{color:#8a5a00}.review{color:#345}.good{color:#064}.dropped{color:#777}
.path{color:#666;font-size:.85em;font-family:monospace}
pre{background:#f6f6f6;padding:4px;overflow-x:auto;white-space:pre-wrap;word-break:break-all;margin:2px 0}
.note{background:#fff8e0;padding:4px 8px;border-left:3px solid #e0b000}
.legend{font-size:.85em;color:#555}figure{margin:.5em 0}
)";

}  // namespace

std::string HtmlReport(const HtmlReportInput& input) {
  const std::vector<OrgReport> none;
  const std::vector<OrgReport>& orgs = input.orgs ? *input.orgs : none;
  std::string inputs;
  for (const std::string& p : input.inputs) inputs += (inputs.empty() ? "" : " ") + p;
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>compliance_check report</title>\n<style>{}</style></head>\n<body>\n"
      "<h1>compliance_check report: <span class=\"badge {}\" id=\"overall\" "
      "data-verdict=\"{}\">{}</span></h1>\n<p class=\"path\">{} &mdash; inputs: {}</p>\n",
      kStyle, input.all_pass ? "pass" : "fail", input.all_pass ? "PASS" : "FAIL",
      input.all_pass ? "PASS" : "FAIL", Text(base::VersionLine("compliance_check")), Text(inputs));

  if (!orgs.empty()) out += "<h2>Verdicts</h2>\n" + SummaryTable(orgs);
  if (!input.logs.empty()) {
    out +=
        "<h2>Result logs</h2>\n<table class=\"logs\"><thead><tr><th>Log</th><th>Ruleset</th>"
        "<th>Verdict</th></tr></thead><tbody>\n";
    for (const checker::LogReport& l : input.logs) {
      out += fmt::format("<tr><td>{}</td><td>{}</td>{}</tr>\n", Text(l.path), Text(l.ruleset),
                         VerdictCell(l.compliant() ? "PASS" : "FAIL"));
    }
    out += "</tbody></table>\n";
    std::string findings;
    for (const checker::LogReport& l : input.logs) findings += LogFindings(l);
    if (!findings.empty()) out += "<ul class=\"findings\">\n" + findings + "</ul>\n";
  }
  if (input.claims_given) out += ClaimsTable(input.claims);

  size_t index = 0;
  for (size_t o = 0; o < orgs.size(); ++o) {
    const OrgReport& org = orgs[o];
    out += fmt::format(
        "<h2 id=\"o{}\">{} <span class=\"badge {}\">{}</span></h2>\n"
        "<p class=\"path\">{} &mdash; ruleset {}</p>\n",
        o, Text(org.name), org.passed() ? "pass" : "fail", org.passed() ? "PASS" : "FAIL",
        Text(org.path), Text(org.ruleset));
    out += List("bad", "Errors", org.errors);
    out += List("warn", "Warnings", org.warnings);
    out += List("review", "Notes", org.notes);
    for (const BenchmarkDirReport& d : org.dirs) out += DirSection(d, index++);
  }
  return out + "</body></html>\n";
}

}  // namespace mlperf::package
